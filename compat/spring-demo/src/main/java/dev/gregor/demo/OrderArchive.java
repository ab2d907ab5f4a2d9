package dev.gregor.demo;

import java.util.List;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.stereotype.Component;

/**
 * Archives batches of orders to orders.archive all or nothing: each batch
 * is sent in one Kafka transaction by a template of its own (the
 * application's template stays non-transactional), from a producer factory
 * with the application's settings and a transaction id prefix. A batch
 * that fails half-way is rolled back, and read_committed consumers never
 * see any of it.
 */
@Component
public class OrderArchive {

	public static final String TOPIC = "orders.archive";

	private final KafkaTemplate<Object, Object> template;

	public OrderArchive(ProducerFactory<Object, Object> producerFactory) {
		DefaultKafkaProducerFactory<Object, Object> transactional = new DefaultKafkaProducerFactory<>(
				producerFactory.getConfigurationProperties());
		transactional.setTransactionIdPrefix("gregor-demo-archive-");
		this.template = new KafkaTemplate<>(transactional);
	}

	/** Sends the batch in one transaction; when failAfterSending, flushes the sends and throws, which rolls them back. */
	public void archive(List<OrderEvent> orders, boolean failAfterSending) {
		this.template.executeInTransaction((ops) -> {
			for (OrderEvent order : orders) {
				ops.send(TOPIC, Integer.toString(order.id()), order);
			}
			if (failAfterSending) {
				ops.flush(); // the sends reach the broker, to be aborted there
				throw new IllegalStateException("archiving failed after " + orders.size() + " sends: rolled back");
			}
			return null;
		});
	}

}
