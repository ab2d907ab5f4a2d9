package dev.gregor.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.kafka.support.SendResult;
import org.springframework.stereotype.Component;

/**
 * When the application starts, sends demo.startup-orders orders (10 unless
 * set; the tests set 0 and send their own) and one poison order, and logs
 * where each was stored, so a run of the app shows the whole round trip:
 * the listener logs the orders it receives, the error handler the poison
 * one it sends to the dead-letter topic.
 */
@Component
public class StartupOrders implements ApplicationRunner {

	private static final Logger log = LoggerFactory.getLogger(StartupOrders.class);

	private final OrderProducer producer;

	private final int count;

	public StartupOrders(OrderProducer producer, @Value("${demo.startup-orders:10}") int count) {
		this.producer = producer;
		this.count = count;
	}

	@Override
	public void run(ApplicationArguments args) {
		if (this.count <= 0) {
			return;
		}
		List<CompletableFuture<SendResult<String, OrderEvent>>> sends = new ArrayList<>();
		for (int i = 0; i < this.count; i++) {
			sends.add(this.producer.send(new OrderEvent(i, "item-" + i, 1 + i % 5)));
		}
		sends.add(this.producer.send(new OrderEvent(this.count, "poison", 0)));
		for (CompletableFuture<SendResult<String, OrderEvent>> send : sends) {
			SendResult<String, OrderEvent> result = send.join();
			log.info("sent order {} to {}-{} at offset {}", result.getProducerRecord().value().id(),
					result.getRecordMetadata().topic(), result.getRecordMetadata().partition(),
					result.getRecordMetadata().offset());
		}
	}

}
