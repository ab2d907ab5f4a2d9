package dev.gregor.demo;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.AppInfoParser;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.SendResult;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The demo against a real Gregor broker started for this test class
 * ({@link GregorBroker}). Before the application starts, the test creates
 * "orders" with one partition, as an older version of the application
 * would have; KafkaAdmin must then grow it to the NewTopic bean's three
 * partitions and set its retention, and create orders.DLT.
 *
 * Each test method is one feature of the compatibility matrix (the Go
 * driver compat/spring_test.go maps method names to feature names). They
 * run in order on one application context: the sends of templateSend are
 * what the later methods find.
 */
@SpringBootTest(properties = { "demo.startup-orders=0", "logging.level.org.apache.kafka=WARN",
		"logging.level.dev.gregor.demo=WARN" })
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class GregorDemoTests {

	static final int N = 100;

	static final int PLAIN_JSON_ID = 1000;

	/** Orders sent while the listener is stopped, from this id on. */
	static final int LATER_FROM = 200;

	static final String GROUP = "gregor-demo";

	static final Duration WAIT = Duration.ofSeconds(60);

	/** Send results of orders 0..N-1 and of the poison order N, by id. */
	static final Map<Integer, RecordMetadata> sent = new HashMap<>();

	@Autowired
	OrderProducer producer;

	@Autowired
	OrderListener listener;

	@Autowired
	KafkaAdmin kafkaAdmin;

	@Autowired
	PaymentListener payments;

	@Autowired
	OrderArchive archive;

	@Autowired
	ShipmentListener shipments;

	@Autowired
	KafkaListenerEndpointRegistry listeners;

	@DynamicPropertySource
	static void gregor(DynamicPropertyRegistry registry) throws Exception {
		GregorBroker broker = GregorBroker.get();
		try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrapServers()))) {
			admin.createTopics(List.of(new NewTopic(KafkaConfig.TOPIC, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
		}
		catch (ExecutionException ex) {
			// A second context in this JVM finds the topic already there.
			if (!(ex.getCause() instanceof TopicExistsException)) {
				throw ex;
			}
		}
		registry.add("spring.kafka.bootstrap-servers", broker::bootstrapServers);
	}

	/** Leaves the versions in use for the Go driver's matrix. */
	@BeforeAll
	static void writeVersions() throws Exception {
		String versions = "spring-kafka=" + KafkaTemplate.class.getPackage().getImplementationVersion() + "\n"
				+ "kafka-clients=" + AppInfoParser.getVersion() + "\n"
				+ "spring-boot=" + SpringBootVersion.getVersion() + "\n";
		Files.writeString(Path.of("target", "client-versions.properties"), versions);
	}

	@Test
	@Order(1)
	void topicBeans() throws Exception {
		try (Admin admin = admin()) {
			Map<String, TopicDescription> topics = admin
				.describeTopics(List.of(KafkaConfig.TOPIC, KafkaConfig.DLT))
				.allTopicNames()
				.get(30, TimeUnit.SECONDS);
			assertThat(topics.get(KafkaConfig.TOPIC).partitions()).as("orders grown from 1 partition").hasSize(3);
			assertThat(topics.get(KafkaConfig.DLT).partitions()).as("orders.DLT created").hasSize(3);
			ConfigResource orders = new ConfigResource(ConfigResource.Type.TOPIC, KafkaConfig.TOPIC);
			Config config = admin.describeConfigs(List.of(orders)).all().get(30, TimeUnit.SECONDS).get(orders);
			assertThat(config.get("retention.ms").value()).isEqualTo(KafkaConfig.RETENTION_MS);
			assertThat(config.get("retention.ms").source()).isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
		}
	}

	@Test
	@Order(2)
	void templateSend() throws Exception {
		List<CompletableFuture<SendResult<String, OrderEvent>>> futures = new ArrayList<>();
		for (int i = 0; i < N; i++) {
			futures.add(this.producer.send(new OrderEvent(i, "item-" + i, 1 + i % 5)));
		}
		futures.add(this.producer.send(new OrderEvent(N, "poison", 0)));
		Map<Integer, List<Long>> offsetsByPartition = new HashMap<>();
		for (CompletableFuture<SendResult<String, OrderEvent>> future : futures) {
			SendResult<String, OrderEvent> result = future.get(30, TimeUnit.SECONDS);
			RecordMetadata meta = result.getRecordMetadata();
			assertThat(meta.topic()).isEqualTo(KafkaConfig.TOPIC);
			assertThat(meta.partition()).isBetween(0, 2);
			assertThat(meta.hasOffset()).isTrue();
			sent.put(result.getProducerRecord().value().id(), meta);
			offsetsByPartition.computeIfAbsent(meta.partition(), (p) -> new ArrayList<>()).add(meta.offset());
		}
		assertThat(sent).hasSize(N + 1);
		assertThat(offsetsByPartition).as("keys spread over the three partitions").hasSize(3);
		// Nothing else was ever written to orders: each partition's offsets are 0..k-1.
		offsetsByPartition.forEach((partition, offsets) -> assertThat(offsets).as("offsets of partition " + partition)
			.containsExactlyInAnyOrderElementsOf(
					IntStream.range(0, offsets.size()).mapToObj(Long::valueOf).toList()));
	}

	@Test
	@Order(3)
	void json() throws Exception {
		// On the wire: JSON text with Spring's type header.
		List<ConsumerRecord<String, byte[]>> records = readAll(KafkaConfig.TOPIC, N + 1);
		ConsumerRecord<String, byte[]> first = records.stream()
			.filter((r) -> "0".equals(r.key()))
			.findFirst()
			.orElseThrow();
		assertThat(new String(first.value(), StandardCharsets.UTF_8))
			.isEqualTo("{\"id\":0,\"item\":\"item-0\",\"quantity\":1}");
		assertThat(headerString(first.headers(), "__TypeId__")).isEqualTo(OrderEvent.class.getName());
		// Received as equal records.
		await().atMost(WAIT).until(() -> this.listener.received().containsKey(N - 1));
		assertThat(this.listener.received().get(7)).first().isEqualTo(new OrderEvent(7, "item-7", 3));
		// Plain JSON from a producer that knows nothing of Spring.
		try (KafkaProducer<String, String> plain = new KafkaProducer<>(clientProps(), new StringSerializer(),
				new StringSerializer())) {
			plain.send(new ProducerRecord<>(KafkaConfig.TOPIC, "plain",
					"{\"id\":" + PLAIN_JSON_ID + ",\"item\":\"plain\",\"quantity\":2}")).get(30, TimeUnit.SECONDS);
		}
		await().atMost(WAIT).until(() -> this.listener.received().containsKey(PLAIN_JSON_ID));
		assertThat(this.listener.received().get(PLAIN_JSON_ID)).containsExactly(new OrderEvent(PLAIN_JSON_ID, "plain", 2));
	}

	@Test
	@Order(4)
	void listenerGroup() throws Exception {
		await().atMost(WAIT).until(() -> this.listener.received().keySet().containsAll(ids()));
		assertThat(this.listener.received()).as("the poison order is never accepted").doesNotContainKey(N);
		awaitStableOnePartitionEach(GROUP, KafkaConfig.TOPIC, GroupType.CLASSIC);
	}

	@Test
	@Order(5)
	void commit() throws Exception {
		awaitCommittedToEnd(GROUP, KafkaConfig.TOPIC);
		// Everything is committed, so nothing can come again: each order arrived exactly once.
		assertExactlyOnce(ids());

		// Stop the listener (its consumers commit and leave the group), send
		// more, start it again: the new members resume at the committed offsets.
		MessageListenerContainer container = this.listeners.getListenerContainer("orders-listener");
		container.stop();
		assertThat(container.isRunning()).isFalse();
		Set<Integer> later = IntStream.range(LATER_FROM, LATER_FROM + 10).boxed().collect(Collectors.toSet());
		for (int id : later) {
			this.producer.send(new OrderEvent(id, "later-" + id, 1)).get(30, TimeUnit.SECONDS);
		}
		container.start();
		await().atMost(WAIT).until(() -> this.listener.received().keySet().containsAll(later));
		awaitCommittedToEnd(GROUP, KafkaConfig.TOPIC);
		Set<Integer> all = new HashSet<>(ids());
		all.addAll(later);
		assertExactlyOnce(all);
	}

	@Test
	@Order(7)
	void retryTopics() throws Exception {
		this.producer.sendPayment(new OrderEvent(1, "paid", 5)).get(30, TimeUnit.SECONDS);
		this.producer.sendPayment(new OrderEvent(2, "busy", 50)).get(30, TimeUnit.SECONDS);
		this.producer.sendPayment(new OrderEvent(3, "declined", 500)).get(30, TimeUnit.SECONDS);
		String retry = PaymentListener.TOPIC + "-retry";
		await().atMost(WAIT).untilAsserted(() -> {
			assertThat(this.payments.attempts().get(1)).containsExactly(PaymentListener.TOPIC);
			assertThat(this.payments.attempts().get(2)).containsExactly(PaymentListener.TOPIC, retry);
			assertThat(this.payments.attempts().get(3)).containsExactly(PaymentListener.TOPIC, retry, retry);
			assertThat(this.payments.declined()).containsOnlyKeys(3);
		});
		try (Admin admin = admin()) {
			assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS))
				.contains(PaymentListener.TOPIC, retry, PaymentListener.TOPIC + "-dlt");
		}
	}

	@Test
	@Order(8)
	void transactions() throws Exception {
		this.archive.archive(orders(500, 10), false);
		assertThatThrownBy(() -> this.archive.archive(orders(600, 10), true)).hasMessageContaining("rolled back");
		this.archive.archive(orders(700, 10), false);
		Set<Integer> committed = new HashSet<>(orders(500, 10).stream().map(OrderEvent::id).toList());
		committed.addAll(orders(700, 10).stream().map(OrderEvent::id).toList());
		assertThat(archivedIds("read_committed", 20)).as("read_committed").containsExactlyInAnyOrderElementsOf(committed);
		assertThat(archivedIds("read_uncommitted", 30)).as("read_uncommitted, the rolled-back batch included")
			.hasSize(30)
			.containsAll(committed);
	}

	@Test
	@Order(9)
	void groupProtocol() throws Exception {
		Set<Integer> ids = IntStream.range(0, 30).boxed().collect(Collectors.toSet());
		for (int id : ids) {
			this.producer.sendShipment(new OrderEvent(id, "shipment-" + id, 1)).get(30, TimeUnit.SECONDS);
		}
		await().atMost(WAIT).until(() -> this.shipments.received().keySet().containsAll(ids));
		awaitStableOnePartitionEach(ShipmentListener.GROUP, ShipmentListener.TOPIC, GroupType.CONSUMER);
		awaitCommittedToEnd(ShipmentListener.GROUP, ShipmentListener.TOPIC);
		for (int id : ids) {
			assertThat(this.shipments.received().get(id)).as("deliveries of shipment " + id).hasSize(1);
		}
	}

	/** Waits until Kafka's admin describes the group, of the given type, Stable with three members holding one partition of topic each. */
	private void awaitStableOnePartitionEach(String groupId, String topic, GroupType type) {
		try (Admin admin = admin()) {
			await().atMost(WAIT).untilAsserted(() -> {
				ConsumerGroupDescription group = admin.describeConsumerGroups(List.of(groupId))
					.describedGroups()
					.get(groupId)
					.get(30, TimeUnit.SECONDS);
				assertThat(group.type()).isEqualTo(type);
				assertThat(group.groupState()).isEqualTo(GroupState.STABLE);
				assertThat(group.members()).as("the listener's three consumers").hasSize(3);
				Set<TopicPartition> assigned = new HashSet<>();
				for (MemberDescription member : group.members()) {
					assertThat(member.assignment().topicPartitions()).hasSize(1);
					assigned.addAll(member.assignment().topicPartitions());
				}
				assertThat(assigned).containsExactlyInAnyOrderElementsOf(partitions(topic));
			});
		}
	}

	private static List<OrderEvent> orders(int from, int n) {
		return IntStream.range(from, from + n).mapToObj((id) -> new OrderEvent(id, "archived-" + id, 1)).toList();
	}

	/** The order ids in orders.archive as a consumer with the isolation level reads them: want records, then a quiet second. */
	private List<Integer> archivedIds(String isolation, int want) {
		Properties props = clientProps();
		props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
		List<Integer> ids = new ArrayList<>();
		try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
				new ByteArrayDeserializer())) {
			consumer.assign(partitions(OrderArchive.TOPIC));
			consumer.seekToBeginning(partitions(OrderArchive.TOPIC));
			long deadline = System.nanoTime() + WAIT.toNanos();
			while (ids.size() < want && System.nanoTime() < deadline) {
				consumer.poll(Duration.ofMillis(200)).forEach((r) -> ids.add(Integer.parseInt(r.key())));
			}
			consumer.poll(Duration.ofSeconds(1)).forEach((r) -> ids.add(Integer.parseInt(r.key())));
		}
		return ids;
	}

	private void assertExactlyOnce(Set<Integer> ids) {
		for (int id : ids) {
			assertThat(this.listener.received().get(id)).as("deliveries of order " + id).hasSize(1);
		}
		assertThat(this.listener.received().get(PLAIN_JSON_ID)).as("deliveries of the plain JSON order").hasSize(1);
	}

	@Test
	@Order(6)
	void dlt() throws Exception {
		byte[] garbage = "this is not JSON {".getBytes(StandardCharsets.UTF_8);
		RecordMetadata garbageMeta;
		try (KafkaProducer<String, byte[]> raw = new KafkaProducer<>(clientProps(), new StringSerializer(),
				new ByteArraySerializer())) {
			garbageMeta = raw.send(new ProducerRecord<>(KafkaConfig.TOPIC, "garbage", garbage)).get(30, TimeUnit.SECONDS);
		}
		List<ConsumerRecord<String, byte[]>> dead = readAll(KafkaConfig.DLT, 2);
		Map<String, ConsumerRecord<String, byte[]>> byKey = dead.stream()
			.collect(Collectors.toMap(ConsumerRecord::key, (r) -> r));
		assertThat(byKey).containsOnlyKeys(Integer.toString(N), "garbage");

		// The order the listener rejected, after its retries.
		ConsumerRecord<String, byte[]> poison = byKey.get(Integer.toString(N));
		RecordMetadata poisonMeta = sent.get(N);
		assertThat(new String(poison.value(), StandardCharsets.UTF_8)).contains("\"quantity\":0");
		assertThat(poison.partition()).as("same partition as the original").isEqualTo(poisonMeta.partition());
		assertOriginHeaders(poison.headers(), poisonMeta.partition(), poisonMeta.offset());
		assertThat(headerString(poison.headers(), KafkaHeaders.DLT_EXCEPTION_MESSAGE))
			.contains("quantity must be positive");

		// The record no deserializer could read, with its bytes untouched.
		ConsumerRecord<String, byte[]> bad = byKey.get("garbage");
		assertThat(bad.value()).isEqualTo(garbage);
		assertOriginHeaders(bad.headers(), garbageMeta.partition(), garbageMeta.offset());
		assertThat(headerString(bad.headers(), KafkaHeaders.DLT_EXCEPTION_FQCN)).contains("DeserializationException");
		assertThat(headerString(bad.headers(), KafkaHeaders.DLT_EXCEPTION_MESSAGE)).isNotBlank();

		// Recovered records are committed like the others, and the app's
		// dead-letter listener, in a group of its own, consumed both.
		awaitCommittedToEnd(GROUP, KafkaConfig.TOPIC);
		awaitCommittedToEnd("gregor-demo-dlt", KafkaConfig.DLT);
	}

	private static void assertOriginHeaders(Headers headers, int partition, long offset) {
		assertThat(headerString(headers, KafkaHeaders.DLT_ORIGINAL_TOPIC)).isEqualTo(KafkaConfig.TOPIC);
		assertThat(ByteBuffer.wrap(header(headers, KafkaHeaders.DLT_ORIGINAL_PARTITION)).getInt()).isEqualTo(partition);
		assertThat(ByteBuffer.wrap(header(headers, KafkaHeaders.DLT_ORIGINAL_OFFSET)).getLong()).isEqualTo(offset);
		assertThat(headerString(headers, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP)).isEqualTo(GROUP);
	}

	private void awaitCommittedToEnd(String group, String topic) throws Exception {
		try (Admin admin = admin()) {
			await().atMost(WAIT).untilAsserted(() -> {
				Map<TopicPartition, OffsetSpec> latest = partitions(topic).stream()
					.collect(Collectors.toMap((tp) -> tp, (tp) -> OffsetSpec.latest()));
				Map<TopicPartition, Long> ends = new HashMap<>();
				admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS)
					.forEach((tp, info) -> ends.put(tp, info.offset()));
				Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
					.partitionsToOffsetAndMetadata()
					.get(30, TimeUnit.SECONDS);
				for (TopicPartition tp : ends.keySet()) {
					if (ends.get(tp) == 0) {
						continue; // nothing to consume, so nothing committed
					}
					assertThat(committed.get(tp)).as(group + "'s committed offset of " + tp).isNotNull();
					assertThat(committed.get(tp).offset()).as(group + "'s committed offset of " + tp).isEqualTo(ends.get(tp));
				}
			});
		}
	}

	/** Reads a topic from the beginning with a plain consumer until it has want records. */
	private List<ConsumerRecord<String, byte[]>> readAll(String topic, int want) {
		List<ConsumerRecord<String, byte[]>> out = new ArrayList<>();
		try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(clientProps(), new StringDeserializer(),
				new ByteArrayDeserializer())) {
			consumer.assign(partitions(topic));
			consumer.seekToBeginning(partitions(topic));
			long deadline = System.nanoTime() + WAIT.toNanos();
			while (out.size() < want && System.nanoTime() < deadline) {
				consumer.poll(Duration.ofMillis(200)).forEach(out::add);
			}
		}
		assertThat(out).as("records in " + topic + ": "
				+ out.stream().map((r) -> r.partition() + "@" + r.offset() + " key " + r.key()).toList())
			.hasSize(want);
		return out;
	}

	private Admin admin() {
		return Admin.create(this.kafkaAdmin.getConfigurationProperties());
	}

	private Properties clientProps() {
		Properties props = new Properties();
		props.putAll(this.kafkaAdmin.getConfigurationProperties());
		props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
		props.put(ProducerConfig.ACKS_CONFIG, "all");
		return props;
	}

	private static List<TopicPartition> partitions(String topic) {
		return IntStream.range(0, 3).mapToObj((p) -> new TopicPartition(topic, p)).toList();
	}

	private static Set<Integer> ids() {
		return IntStream.range(0, N).boxed().collect(Collectors.toSet());
	}

	private static byte[] header(Headers headers, String name) {
		Header h = headers.lastHeader(name);
		assertThat(h).as("header " + name).isNotNull();
		return h.value();
	}

	private static String headerString(Headers headers, String name) {
		return new String(header(headers, name), StandardCharsets.UTF_8);
	}

}
