# kcat (librdkafka's command-line client), from Debian.
COMPAT_DEPS += compat-deps-kcat
.PHONY: compat-deps-kcat
compat-deps-kcat:
	@command -v kcat >/dev/null 2>&1 || { \
		echo "installing kcat"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat; }
