# The Java reference client (org.apache.kafka:kafka-clients) for
# compat/java_test.go: compat/java is built once per version listed in
# compat/java/versions into compat/java/target/kafka-<version>/ (classes,
# and every runtime jar under dependency/, resolved by Maven from Maven
# Central). A stamp file there makes a rebuild happen only when the pom,
# the versions list or a source file changes. Java and Maven come from
# Debian when missing.
JAVA_COMPAT_VERSIONS := $(shell cat compat/java/versions)
JAVA_COMPAT_INPUTS := compat/java/pom.xml compat/java/versions $(shell find compat/java/src -type f)
COMPAT_DEPS += compat-deps-java
.PHONY: compat-deps-java compat-deps-java-tools
compat-deps-java: $(foreach v,$(JAVA_COMPAT_VERSIONS),compat/java/target/kafka-$(v)/.built)

compat-deps-java-tools:
	@command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1 || { \
		echo "installing Java and Maven"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven; }

compat/java/target/kafka-%/.built: $(JAVA_COMPAT_INPUTS) | compat-deps-java-tools
	@echo "building compat/java against kafka-clients $*"
	rm -rf compat/java/target/kafka-$*
	mvn -q -B -Dstyle.color=never -f compat/java/pom.xml -Dkafka.version=$* compile dependency:copy-dependencies
	touch $@
