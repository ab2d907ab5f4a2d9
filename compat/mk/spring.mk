# The Spring Boot demo (compat/spring-demo) for compat/spring_test.go, which
# runs it with `mvn -o`. Spring Boot, Spring for Apache Kafka, the Kafka
# client and Maven's plugins go into ~/.m2 from Maven Central; Surefire
# resolves its JUnit provider only when tests run, so the demo's
# broker-free test is run once too. A stamp in ~/.m2 named after the pom's
# hash makes this happen once per pom. Java and Maven come from Debian
# when missing.
SPRING_DEMO := compat/spring-demo
SPRING_DEMO_STAMP = $(HOME)/.m2/repository/.gregor-spring-demo-$(shell sha256sum $(SPRING_DEMO)/pom.xml | cut -c1-16)
COMPAT_DEPS += compat-deps-spring
.PHONY: compat-deps-spring
compat-deps-spring:
	@command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1 || { \
		echo "installing Java and Maven"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven; }
	@test -f $(SPRING_DEMO_STAMP) || { \
		set -e; echo "resolving $(SPRING_DEMO)'s Maven dependencies into ~/.m2"; \
		cd $(SPRING_DEMO); \
		mvn -q -B -Dstyle.color=never dependency:go-offline; \
		mvn -q -B -Dstyle.color=never test -Dtest=OrderEventJsonTests; \
		touch $(SPRING_DEMO_STAMP); }
