package dev.gregor.demo;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The classic Spring for Apache Kafka demo: a KafkaTemplate producer that
 * checks every send, a @KafkaListener in a consumer group, topics declared
 * as NewTopic beans, JSON events and a dead-letter topic. Point
 * spring.kafka.bootstrap-servers at a Gregor broker (see README.md).
 */
@SpringBootApplication
public class DemoApplication {

	public static void main(String[] args) {
		SpringApplication.run(DemoApplication.class, args);
	}

}
