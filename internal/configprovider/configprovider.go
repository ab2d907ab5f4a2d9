// Package configprovider resolves the variables of Kafka's config
// providers (KIP-297, KIP-421) in the properties a node starts with, so that
// secrets can stay out of server.properties. config.providers lists
// provider names; config.providers.<name>.class names each one's Java
// class, one of the three Kafka ships, which Gregor implements:
//
//	FileConfigProvider       ${name:/path/file.properties:key}  a key of a properties file
//	DirectoryConfigProvider  ${name:/path/dir:file}             the contents of a file in a directory
//	EnvVarConfigProvider     ${name:VAR}                        an environment variable
//
// config.providers.<name>.param.<p> configures them: allowed.paths (file
// and directory providers: the absolute paths under which they may read)
// and allowlist.pattern (environment: the variable names it gives, a
// regular expression the whole name must match). As in Kafka, a variable
// naming a provider that is not configured, a key its provider does not
// have, a missing directory or a path outside allowed.paths stays as
// written; a properties file that cannot be read, a class Gregor does not
// provide or a bad parameter stops the start.
package configprovider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gregor-broker/gregor/internal/properties"
)

// Key is the broker key listing the providers.
const Key = "config.providers"

// Kafka's built-in providers, by class name.
const (
	fileClass = "org.apache.kafka.common.config.provider.FileConfigProvider"
	dirClass  = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
	envClass  = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
)

// variable is Kafka's ConfigTransformer pattern: ${provider:[path:]key}.
var variable = regexp.MustCompile(`\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}`)

// IsProviderKey reports whether key configures a provider
// (config.providers.<name>.class or .param.<p>).
func IsProviderKey(key string) bool {
	return strings.HasPrefix(key, Key+".")
}

// provider gives the values of keys at path; a key it does not have is
// left out.
type provider interface {
	get(path string, keys []string) (map[string]string, error)
}

// Resolve returns props with every variable replaced by its provider's
// value. Without config.providers, props come back as they are.
func Resolve(props map[string]string) (map[string]string, error) {
	list, ok := props[Key]
	if !ok || list == "" {
		return props, nil
	}
	providers := map[string]provider{}
	for _, name := range strings.Split(list, ",") { // not trimmed, as in Kafka
		class, ok := props[Key+"."+name+".class"]
		if !ok {
			continue // named but not configured: its variables stay
		}
		p, err := newProvider(name, class, params(props, name))
		if err != nil {
			return nil, err
		}
		providers[name] = p
	}
	type source struct{ provider, path string }
	wanted := map[source][]string{}
	for _, v := range props {
		for _, m := range variable.FindAllStringSubmatch(v, -1) {
			if _, ok := providers[m[1]]; ok {
				s := source{m[1], m[2]}
				wanted[s] = append(wanted[s], m[3])
			}
		}
	}
	if len(wanted) == 0 {
		return props, nil
	}
	values := map[source]map[string]string{}
	for s, keys := range wanted {
		data, err := providers[s.provider].get(s.path, keys)
		if err != nil {
			return nil, err
		}
		values[s] = data
	}
	out := make(map[string]string, len(props))
	for k, v := range props {
		out[k] = variable.ReplaceAllStringFunc(v, func(ref string) string {
			m := variable.FindStringSubmatch(ref)
			if value, ok := values[source{m[1], m[2]}][m[3]]; ok {
				return value
			}
			return ref
		})
	}
	return out, nil
}

// params are the config.providers.<name>.param.* keys, by parameter.
func params(props map[string]string, name string) map[string]string {
	prefix := Key + "." + name + ".param."
	out := map[string]string{}
	for k, v := range props {
		if p, ok := strings.CutPrefix(k, prefix); ok {
			out[p] = v
		}
	}
	return out
}

func newProvider(name, class string, params map[string]string) (provider, error) {
	switch class {
	case fileClass, dirClass:
		allowed, err := allowedPaths(params["allowed.paths"])
		if err != nil {
			return nil, err
		}
		if class == fileClass {
			return fileProvider{allowed}, nil
		}
		return dirProvider{allowed}, nil
	case envClass:
		e := envProvider{}
		if p, ok := params["allowlist.pattern"]; ok {
			re, err := regexp.Compile(`^(?:` + p + `)$`)
			if err != nil {
				return nil, fmt.Errorf("Invalid value %s for configuration %s.%s.param.allowlist.pattern: %v", p, Key, name, err)
			}
			e.allow = re
		}
		return e, nil
	}
	return nil, fmt.Errorf("Invalid value %s for configuration %s.%s.class: Could not load config provider class or one of its dependencies "+
		"(Gregor provides Kafka's FileConfigProvider, DirectoryConfigProvider and EnvVarConfigProvider)", class, Key, name)
}

// allowedPaths parses allowed.paths: absolute paths, comma-separated; nil
// allows every path.
func allowedPaths(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("Path %s is not absolute", p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

// permitted is path, cleaned, if it is given and lies under one of allowed
// (whole path elements, as Java's Path.startsWith compares), or nothing.
func permitted(allowed []string, path string) (string, bool) {
	if path == "" {
		return "", false
	}
	clean := filepath.Clean(path)
	if allowed == nil {
		return clean, true
	}
	for _, a := range allowed {
		if clean == a || strings.HasPrefix(clean, strings.TrimSuffix(a, "/")+"/") {
			return clean, true
		}
	}
	return "", false
}

// fileProvider is FileConfigProvider: the keys of a properties file.
type fileProvider struct{ allowed []string }

func (f fileProvider) get(path string, keys []string) (map[string]string, error) {
	path, ok := permitted(f.allowed, path)
	if !ok {
		return nil, nil
	}
	props, err := properties.Read(path)
	if err != nil {
		return nil, fmt.Errorf("Could not read properties from file %s: %w", path, err)
	}
	return props, nil
}

// dirProvider is DirectoryConfigProvider: the contents of the regular
// files directly in a directory, by file name.
type dirProvider struct{ allowed []string }

func (d dirProvider) get(path string, keys []string) (map[string]string, error) {
	dir, ok := permitted(d.allowed, path)
	if !ok {
		return nil, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil
	}
	out := map[string]string{}
	for _, k := range keys {
		if k == "" || strings.ContainsRune(k, filepath.Separator) || k == "." || k == ".." {
			continue
		}
		file := filepath.Join(dir, k)
		if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("Could not read file %s: %w", file, err)
		}
		out[k] = string(b)
	}
	return out, nil
}

// envProvider is EnvVarConfigProvider: environment variables, those whose
// name allow matches when it is set.
type envProvider struct{ allow *regexp.Regexp }

func (e envProvider) get(path string, keys []string) (map[string]string, error) {
	if path != "" {
		return nil, fmt.Errorf("Path is not supported for EnvVarConfigProvider, invalid value '%s'", path)
	}
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := os.LookupEnv(k); ok && (e.allow == nil || e.allow.MatchString(k)) {
			out[k] = v
		}
	}
	return out, nil
}
