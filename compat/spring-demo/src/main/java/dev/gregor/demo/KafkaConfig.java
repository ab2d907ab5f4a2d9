package dev.gregor.demo;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Topics and error handling. KafkaAdmin (auto-configured by Spring Boot)
 * creates the NewTopic beans at start-up, adds partitions to a topic that
 * has fewer and, with spring.kafka.admin.modify-topic-configs, brings its
 * configs in line. A record the listener keeps failing on is retried twice
 * and then published to orders.DLT, to the same partition; a record whose
 * value cannot be deserialized goes there at once, with its original bytes.
 */
@Configuration
public class KafkaConfig {

	public static final String TOPIC = "orders";

	/**
	 * The dead-letter topic: the classic "<topic>.DLT", named explicitly by
	 * the recoverer's destination resolver (Spring Kafka 4's own default
	 * became "<topic>-dlt").
	 */
	public static final String DLT = TOPIC + ".DLT";

	/** Three days: not the broker default (seven), so KafkaAdmin must set it. */
	public static final String RETENTION_MS = "259200000";

	@Bean
	public NewTopic ordersTopic() {
		return TopicBuilder.name(TOPIC).partitions(3).replicas(1)
			.config(TopicConfig.RETENTION_MS_CONFIG, RETENTION_MS)
			.build();
	}

	@Bean
	public NewTopic ordersArchiveTopic() {
		return TopicBuilder.name(OrderArchive.TOPIC).partitions(3).replicas(1).build();
	}

	@Bean
	public NewTopic shipmentsTopic() {
		return TopicBuilder.name(ShipmentListener.TOPIC).partitions(3).replicas(1).build();
	}

	@Bean
	public NewTopic ordersDeadLetterTopic() {
		return TopicBuilder.name(DLT).partitions(3).replicas(1).build();
	}

	/**
	 * Picked up by Boot's listener container factory. Failed records are
	 * published with the application's KafkaTemplate (JSON values), except
	 * undeserializable ones, whose value is the raw byte[] and needs a
	 * template with a byte-array serializer.
	 */
	@Bean
	public DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template,
			ProducerFactory<Object, Object> producerFactory) {
		KafkaTemplate<Object, Object> bytesTemplate = new KafkaTemplate<>(producerFactory,
				Map.of(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
		Map<Class<?>, KafkaOperations<?, ?>> templates = new LinkedHashMap<>();
		templates.put(byte[].class, bytesTemplate);
		templates.put(Object.class, template);
		DeadLetterPublishingRecoverer recoverer = new DeadLetterPublishingRecoverer(templates,
				(record, ex) -> new TopicPartition(record.topic() + ".DLT", record.partition()));
		return new DefaultErrorHandler(recoverer, new FixedBackOff(100L, 2L));
	}

}
