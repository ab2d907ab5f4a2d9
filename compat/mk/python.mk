# Python clients (kafka-python, confluent-kafka) in the virtualenv
# compat/.venv, from compat/python/requirements.txt. Reinstalls only when
# the requirements change; installs python3-venv from Debian when the
# system Python cannot make a venv.
COMPAT_PY_VENV := compat/.venv
COMPAT_PY_REQS := compat/python/requirements.txt
COMPAT_DEPS += compat-deps-python
.PHONY: compat-deps-python
compat-deps-python:
	@cmp -s $(COMPAT_PY_REQS) $(COMPAT_PY_VENV)/requirements.installed || { \
		set -e; echo "installing the Python clients into $(COMPAT_PY_VENV)"; \
		python3 -m venv $(COMPAT_PY_VENV) 2>/dev/null || { \
			rm -rf $(COMPAT_PY_VENV); \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; \
			python3 -m venv $(COMPAT_PY_VENV); }; \
		$(COMPAT_PY_VENV)/bin/pip install -q --disable-pip-version-check -r $(COMPAT_PY_REQS); \
		cp $(COMPAT_PY_REQS) $(COMPAT_PY_VENV)/requirements.installed; }
