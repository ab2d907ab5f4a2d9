# kafkajs and its codec packages in compat/js/node_modules, installed with
# `npm ci` from compat/js/package-lock.json. lz4 and zstd-napi compile
# with node-gyp, which needs g++ and Node's headers next to the node
# binary (Debian's nodejs keeps them in libnode-dev); both come from Debian
# when missing. Reinstalls only when the lock file changes.
COMPAT_JS_DIR := compat/js
COMPAT_DEPS += compat-deps-js
.PHONY: compat-deps-js
compat-deps-js:
	@cmp -s $(COMPAT_JS_DIR)/package-lock.json $(COMPAT_JS_DIR)/node_modules/.gregor-installed-lock || { \
		set -e; echo "installing kafkajs into $(COMPAT_JS_DIR)/node_modules"; \
		headers="$$(dirname "$$(readlink -f "$$(command -v node)")")/../include/node/node.h"; \
		if ! command -v g++ >/dev/null 2>&1 || [ ! -f "$$headers" ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ libnode-dev; fi; \
		cd $(COMPAT_JS_DIR) && npm ci --no-audit --no-fund --loglevel=error; \
		cp package-lock.json node_modules/.gregor-installed-lock; }
