# Apache Kafka's MirrorMaker 2 (connect-mirror with its runtime
# dependencies, from Maven Central) for compat/mirror_maker_test.go. The
# version is the one compat/mirror/pom.xml names; the jars go to
# ~/.cache/gregor-compat/mirror-maker-<version>, and a copy of the pom
# there marks a complete download. A new set is fetched beside the old
# one, which stays in place if the fetch fails.
MIRROR_KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' compat/mirror/pom.xml)
MIRROR_KAFKA_DIR := $(HOME)/.cache/gregor-compat/mirror-maker-$(MIRROR_KAFKA_VERSION)
COMPAT_DEPS += compat-deps-mirror
.PHONY: compat-deps-mirror
compat-deps-mirror: compat-deps-tools
	@cmp -s compat/mirror/pom.xml $(MIRROR_KAFKA_DIR)/pom.xml || { \
		echo "fetching Kafka $(MIRROR_KAFKA_VERSION) MirrorMaker 2 into $(MIRROR_KAFKA_DIR)"; \
		rm -rf $(MIRROR_KAFKA_DIR).new && \
		mvn -q -B -f compat/mirror/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
			-DoutputDirectory=$(MIRROR_KAFKA_DIR).new && \
		cp compat/mirror/pom.xml $(MIRROR_KAFKA_DIR).new/pom.xml && \
		rm -rf $(MIRROR_KAFKA_DIR) && mv $(MIRROR_KAFKA_DIR).new $(MIRROR_KAFKA_DIR); }
