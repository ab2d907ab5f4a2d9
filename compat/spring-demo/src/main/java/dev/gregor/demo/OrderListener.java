package dev.gregor.demo;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.stereotype.Component;

/**
 * Consumes orders in the consumer group spring.kafka.consumer.group-id,
 * with spring.kafka.listener.concurrency consumers. It rejects an order
 * with a quantity below one by throwing; everything else is recorded, so
 * the demo (and its test) can see what arrived and how often.
 */
@Component
public class OrderListener {

	private static final Logger log = LoggerFactory.getLogger(OrderListener.class);

	private final Map<Integer, List<OrderEvent>> received = new ConcurrentHashMap<>();

	@KafkaListener(id = "orders-listener", idIsGroup = false, topics = KafkaConfig.TOPIC)
	public void onOrder(@Payload OrderEvent event, @Header(KafkaHeaders.RECEIVED_PARTITION) int partition) {
		if (event.quantity() < 1) {
			throw new IllegalArgumentException("order " + event.id() + ": quantity must be positive, got "
					+ event.quantity());
		}
		log.info("order {} received from partition {}", event.id(), partition);
		this.received.computeIfAbsent(event.id(), (id) -> new CopyOnWriteArrayList<>()).add(event);
	}

	/** Every order received so far, by id, each delivery once in its list. */
	public Map<Integer, List<OrderEvent>> received() {
		return this.received;
	}

}
