package dev.gregor.demo;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Consumes "shipments" with three consumers in a group of Kafka 4's
 * consumer protocol (group.protocol=consumer: the broker assigns the
 * partitions, KIP-848), and records what arrived, each delivery once in
 * its list.
 */
@Component
public class ShipmentListener {

	public static final String TOPIC = "shipments";

	public static final String GROUP = "gregor-demo-shipments";

	private final Map<Integer, List<OrderEvent>> received = new ConcurrentHashMap<>();

	@KafkaListener(id = "shipments-listener", idIsGroup = false, groupId = GROUP, topics = TOPIC, concurrency = "3",
			properties = "group.protocol=consumer")
	public void onShipment(OrderEvent event) {
		this.received.computeIfAbsent(event.id(), (id) -> new CopyOnWriteArrayList<>()).add(event);
	}

	/** Every shipment received so far, by order id. */
	public Map<Integer, List<OrderEvent>> received() {
		return this.received;
	}

}
