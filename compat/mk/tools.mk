# Apache Kafka's command-line tools (kafka-tools and kafka_2.13 with their
# runtime dependencies, from Maven Central) for compat/tools_test.go. The
# version is the one compat/tools/pom.xml names; the jars go to
# ~/.cache/gregor-compat/kafka-tools-<version>, and a copy of the pom there
# marks a complete download of that pom's dependencies. A new set is
# fetched beside the old one, which stays in place if the fetch fails.
TOOLS_KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' compat/tools/pom.xml)
TOOLS_KAFKA_DIR := $(HOME)/.cache/gregor-compat/kafka-tools-$(TOOLS_KAFKA_VERSION)
COMPAT_DEPS += compat-deps-tools
.PHONY: compat-deps-tools
compat-deps-tools:
	@command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1 || { \
		echo "installing Java and Maven"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven; }
	@cmp -s compat/tools/pom.xml $(TOOLS_KAFKA_DIR)/pom.xml || { \
		echo "fetching Kafka $(TOOLS_KAFKA_VERSION) command-line tools into $(TOOLS_KAFKA_DIR)"; \
		rm -rf $(TOOLS_KAFKA_DIR).new && \
		mvn -q -B -f compat/tools/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
			-DoutputDirectory=$(TOOLS_KAFKA_DIR).new && \
		cp compat/tools/pom.xml $(TOOLS_KAFKA_DIR).new/pom.xml && \
		rm -rf $(TOOLS_KAFKA_DIR) && mv $(TOOLS_KAFKA_DIR).new $(TOOLS_KAFKA_DIR); }
