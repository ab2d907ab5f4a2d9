package dev.gregor.demo;

import java.util.concurrent.CompletableFuture;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.SendResult;
import org.springframework.stereotype.Service;

/**
 * Sends order events to "orders", "payments" or "shipments" with the KafkaTemplate,
 * keyed by order id, and checks every send's result: a failed send is
 * logged and fails the returned future, a successful one carries the
 * partition and offset it got.
 */
@Service
public class OrderProducer {

	private static final Logger log = LoggerFactory.getLogger(OrderProducer.class);

	private final KafkaTemplate<String, OrderEvent> template;

	public OrderProducer(KafkaTemplate<String, OrderEvent> template) {
		this.template = template;
	}

	public CompletableFuture<SendResult<String, OrderEvent>> send(OrderEvent event) {
		return send(KafkaConfig.TOPIC, event);
	}

	public CompletableFuture<SendResult<String, OrderEvent>> sendPayment(OrderEvent event) {
		return send(PaymentListener.TOPIC, event);
	}

	public CompletableFuture<SendResult<String, OrderEvent>> sendShipment(OrderEvent event) {
		return send(ShipmentListener.TOPIC, event);
	}

	private CompletableFuture<SendResult<String, OrderEvent>> send(String topic, OrderEvent event) {
		return this.template.send(topic, Integer.toString(event.id()), event)
			.whenComplete((result, ex) -> {
				if (ex != null) {
					log.error("order {} was not sent", event.id(), ex);
				}
				else {
					log.debug("order {} stored at {}-{}@{}", event.id(), result.getRecordMetadata().topic(),
							result.getRecordMetadata().partition(), result.getRecordMetadata().offset());
				}
			});
	}

}
