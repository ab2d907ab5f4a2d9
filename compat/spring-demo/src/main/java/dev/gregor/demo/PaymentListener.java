package dev.gregor.demo;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.DltHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.stereotype.Component;

/**
 * Charges orders sent to "payments", with non-blocking retries: a failed
 * payment goes to payments-retry and is tried again there after a back-off
 * (the container pauses the partition until the record is due), up to
 * three attempts in all, then to payments-dlt and the @DltHandler. Spring
 * creates the three topics. The payment gateway is simulated: a quantity of
 * 50 fails once (busy), above 100 always (declined).
 */
@Component
public class PaymentListener {

	public static final String TOPIC = "payments";

	private static final Logger log = LoggerFactory.getLogger(PaymentListener.class);

	private final Map<Integer, List<String>> attempts = new ConcurrentHashMap<>();

	private final Map<Integer, OrderEvent> declined = new ConcurrentHashMap<>();

	@RetryableTopic(attempts = "3", backOff = @BackOff(delay = 300), numPartitions = "2")
	@KafkaListener(id = "payments-listener", idIsGroup = false, groupId = "gregor-demo-payments", topics = TOPIC)
	public void onPayment(OrderEvent event, @Header(KafkaHeaders.RECEIVED_TOPIC) String topic) {
		List<String> tried = this.attempts.computeIfAbsent(event.id(), (id) -> new CopyOnWriteArrayList<>());
		tried.add(topic);
		if (event.quantity() > 100) {
			throw new IllegalStateException("payment " + event.id() + " declined");
		}
		if (event.quantity() == 50 && tried.size() == 1) {
			throw new IllegalStateException("payment " + event.id() + ": gateway busy");
		}
		log.info("payment {} charged (attempt {}, from {})", event.id(), tried.size(), topic);
	}

	@DltHandler
	public void onDeclined(OrderEvent event, @Header(KafkaHeaders.RECEIVED_TOPIC) String topic) {
		log.warn("payment {} given up, from {}", event.id(), topic);
		this.declined.put(event.id(), event);
	}

	/** The topics each payment was tried from, in order, by order id. */
	public Map<Integer, List<String>> attempts() {
		return this.attempts;
	}

	/** Payments that reached the dead-letter topic, by order id. */
	public Map<Integer, OrderEvent> declined() {
		return this.declined;
	}

}
