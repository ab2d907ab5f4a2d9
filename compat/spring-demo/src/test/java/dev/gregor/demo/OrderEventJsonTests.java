package dev.gregor.demo;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

import org.springframework.kafka.support.serializer.ErrorHandlingDeserializer;
import org.springframework.kafka.support.serializer.JacksonJsonDeserializer;
import org.springframework.kafka.support.serializer.JacksonJsonSerializer;
import org.springframework.kafka.support.serializer.SerializationUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's JSON settings without a broker: what the serializer writes
 * and what the consumer's deserializer chain (as application.yml sets it
 * up) makes of it, of plain JSON and of bytes that are not JSON. Being
 * broker-free, it is also what `make compat-deps` runs to have Maven
 * resolve the test runner for offline runs.
 */
class OrderEventJsonTests {

	private static final Map<String, Object> CONSUMER_CONFIG = Map.of(
			ErrorHandlingDeserializer.VALUE_DESERIALIZER_CLASS, JacksonJsonDeserializer.class.getName(),
			JacksonJsonDeserializer.TRUSTED_PACKAGES, "dev.gregor.demo",
			JacksonJsonDeserializer.VALUE_DEFAULT_TYPE, OrderEvent.class.getName());

	@Test
	void roundTrip() {
		RecordHeaders headers = new RecordHeaders();
		byte[] bytes;
		try (JacksonJsonSerializer<OrderEvent> serializer = new JacksonJsonSerializer<>()) {
			bytes = serializer.serialize("orders", headers, new OrderEvent(3, "tea", 2));
		}
		assertThat(new String(bytes, StandardCharsets.UTF_8)).isEqualTo("{\"id\":3,\"item\":\"tea\",\"quantity\":2}");
		assertThat(new String(headers.lastHeader("__TypeId__").value(), StandardCharsets.UTF_8))
			.isEqualTo(OrderEvent.class.getName());
		try (ErrorHandlingDeserializer<Object> deserializer = consumerDeserializer()) {
			assertThat(deserializer.deserialize("orders", headers, bytes)).isEqualTo(new OrderEvent(3, "tea", 2));
			byte[] plain = "{\"id\":4,\"item\":\"milk\",\"quantity\":1}".getBytes(StandardCharsets.UTF_8);
			assertThat(deserializer.deserialize("orders", new RecordHeaders(), plain))
				.isEqualTo(new OrderEvent(4, "milk", 1));
		}
	}

	@Test
	void garbageBecomesAHeaderNotAnException() {
		RecordHeaders headers = new RecordHeaders();
		try (ErrorHandlingDeserializer<Object> deserializer = consumerDeserializer()) {
			Object value = deserializer.deserialize("orders", headers,
					"not JSON {".getBytes(StandardCharsets.UTF_8));
			assertThat(value).isNull();
		}
		assertThat(headers.lastHeader(SerializationUtils.VALUE_DESERIALIZER_EXCEPTION_HEADER)).isNotNull();
	}

	private static ErrorHandlingDeserializer<Object> consumerDeserializer() {
		ErrorHandlingDeserializer<Object> deserializer = new ErrorHandlingDeserializer<>();
		deserializer.configure(CONSUMER_CONFIG, false);
		return deserializer;
	}

}
