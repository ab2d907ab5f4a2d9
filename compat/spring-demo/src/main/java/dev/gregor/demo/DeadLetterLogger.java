package dev.gregor.demo;

import java.nio.charset.StandardCharsets;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.stereotype.Component;

/**
 * Logs what lands in the dead-letter topic, in its own group. Values are
 * read as bytes: a dead letter may be exactly the bytes that no
 * deserializer could read.
 */
@Component
public class DeadLetterLogger {

	private static final Logger log = LoggerFactory.getLogger(DeadLetterLogger.class);

	@KafkaListener(id = "dead-letters", topics = KafkaConfig.DLT, groupId = "gregor-demo-dlt",
			concurrency = "1", properties = {
					"value.deserializer=org.apache.kafka.common.serialization.ByteArrayDeserializer" })
	public void onDeadLetter(ConsumerRecord<String, byte[]> record) {
		log.warn("dead letter at {}-{}@{} from {}: {} ({})", record.topic(), record.partition(), record.offset(),
				header(record, KafkaHeaders.DLT_ORIGINAL_TOPIC), new String(record.value(), StandardCharsets.UTF_8),
				header(record, KafkaHeaders.DLT_EXCEPTION_MESSAGE));
	}

	private static String header(ConsumerRecord<String, byte[]> record, String name) {
		Header h = record.headers().lastHeader(name);
		return (h != null) ? new String(h.value(), StandardCharsets.UTF_8) : "";
	}

}
