# Go clients (franz-go, IBM/sarama, segmentio/kafka-go, confluent-kafka-go):
# Go modules pinned in go.mod. confluent-kafka-go links the librdkafka it
# bundles through cgo, so a C compiler must be present.
COMPAT_DEPS += compat-deps-goclients
.PHONY: compat-deps-goclients
compat-deps-goclients:
	@command -v gcc >/dev/null 2>&1 || { \
		echo "installing gcc for cgo (confluent-kafka-go)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev; }
	@$(GO) mod download github.com/twmb/franz-go github.com/IBM/sarama \
		github.com/segmentio/kafka-go github.com/confluentinc/confluent-kafka-go/v2
