package configprovider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	fileP = "config.providers.file.class"
	dirP  = "config.providers.dir.class"
	envP  = "config.providers.env.class"
)

// secrets writes a properties file and a directory of secret files, as
// the cases below read them.
func secrets(t *testing.T) (root, file, dir string) {
	t.Helper()
	root = t.TempDir()
	file = filepath.Join(root, "secrets.properties")
	dir = filepath.Join(root, "dir")
	must(t, os.WriteFile(file, []byte("# comment\nretention=777000\nsecret.password = hunter2\n"), 0o600))
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "ret"), []byte("ms-from-dir"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "nl"), []byte("line1\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, ".hidden"), []byte("hid"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("deep"), 0o600))
	return root, file, dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The behaviours are those Kafka 4.4's KafkaConfig showed, probed by hand
// with files like these: a value resolved, left as written, or (below) the
// start refused.
func TestResolveAsKafka(t *testing.T) {
	root, file, dir := secrets(t)
	t.Setenv("GREGOR_TEST_RET", "424242")
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string // the value of "v" after resolution
	}{
		{"file", map[string]string{Key: "file", fileP: fileClass, "v": "${file:" + file + ":retention}"}, "777000"},
		{"two in one value", map[string]string{Key: "file", fileP: fileClass,
			"v": "a${file:" + file + ":retention}b${file:" + file + ":secret.password}c"}, "a777000bhunter2c"},
		{"missing key stays", map[string]string{Key: "file", fileP: fileClass, "v": "${file:" + file + ":nokey}"}, "${file:" + file + ":nokey}"},
		{"provider not listed stays", map[string]string{fileP: fileClass, "v": "${file:" + file + ":retention}"}, "${file:" + file + ":retention}"},
		{"listed without class stays", map[string]string{Key: "file", "v": "${file:" + file + ":retention}"}, "${file:" + file + ":retention}"},
		{"names are not trimmed", map[string]string{Key: " file", fileP: fileClass, "v": "${file:" + file + ":retention}"}, "${file:" + file + ":retention}"},
		{"other provider stays", map[string]string{Key: "file", fileP: fileClass, "v": "${other:" + file + ":retention}"}, "${other:" + file + ":retention}"},
		{"file without path stays", map[string]string{Key: "file", fileP: fileClass, "v": "${file:retention}"}, "${file:retention}"},
		{"file outside allowed.paths stays", map[string]string{Key: "file", fileP: fileClass,
			"config.providers.file.param.allowed.paths": "/etc", "v": "${file:" + file + ":retention}"}, "${file:" + file + ":retention}"},
		{"file inside allowed.paths", map[string]string{Key: "file", fileP: fileClass,
			"config.providers.file.param.allowed.paths": "/etc," + root, "v": "${file:" + file + ":retention}"}, "777000"},
		{"a prefix of a name is not a parent", map[string]string{Key: "file", fileP: fileClass,
			"config.providers.file.param.allowed.paths": file[:len(file)-3], "v": "${file:" + file + ":retention}"}, "${file:" + file + ":retention}"},
		{"dir", map[string]string{Key: "dir", dirP: dirClass, "v": "${dir:" + dir + ":ret}"}, "ms-from-dir"},
		{"dir keeps a trailing newline", map[string]string{Key: "dir", dirP: dirClass, "v": "${dir:" + dir + ":nl}x"}, "line1\nx"},
		{"dir reads hidden files", map[string]string{Key: "dir", dirP: dirClass, "v": "${dir:" + dir + ":.hidden}"}, "hid"},
		{"dir does not descend", map[string]string{Key: "dir", dirP: dirClass, "v": "${dir:" + dir + ":sub/f}"}, "${dir:" + dir + ":sub/f}"},
		{"missing dir stays", map[string]string{Key: "dir", dirP: dirClass, "v": "${dir:" + root + "/nodir:ret}"}, "${dir:" + root + "/nodir:ret}"},
		{"dir cleaned before allowed.paths", map[string]string{Key: "dir", dirP: dirClass,
			"config.providers.dir.param.allowed.paths": dir, "v": "${dir:" + dir + "/../dir:ret}"}, "ms-from-dir"},
		{"env", map[string]string{Key: "env", envP: envClass, "v": "${env:GREGOR_TEST_RET}"}, "424242"},
		{"env not set stays", map[string]string{Key: "env", envP: envClass, "v": "${env:GREGOR_TEST_NOT_SET}"}, "${env:GREGOR_TEST_NOT_SET}"},
		{"env outside allowlist stays", map[string]string{Key: "env", envP: envClass,
			"config.providers.env.param.allowlist.pattern": "X.*", "v": "${env:GREGOR_TEST_RET}"}, "${env:GREGOR_TEST_RET}"},
		{"env allowlist matches whole names", map[string]string{Key: "env", envP: envClass,
			"config.providers.env.param.allowlist.pattern": "GREGOR_TEST_.*", "v": "${env:GREGOR_TEST_RET}"}, "424242"},
		{"two providers", map[string]string{Key: "file,env", fileP: fileClass, envP: envClass,
			"v": "${file:" + file + ":secret.password}/${env:GREGOR_TEST_RET}"}, "hunter2/424242"},
	} {
		got, err := Resolve(tc.props)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got["v"] != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got["v"], tc.want)
		}
	}
}

func TestResolveRefusesAsKafka(t *testing.T) {
	root, file, _ := secrets(t)
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"missing file", map[string]string{Key: "file", fileP: fileClass, "v": "${file:" + root + "/missing.properties:k}"},
			"Could not read properties from file " + root + "/missing.properties"},
		{"class Gregor does not provide", map[string]string{Key: "vault", "config.providers.vault.class": "com.example.VaultConfigProvider", "v": "x"},
			"Invalid value com.example.VaultConfigProvider for configuration config.providers.vault.class: Could not load config provider class"},
		{"relative allowed path", map[string]string{Key: "file", fileP: fileClass, "config.providers.file.param.allowed.paths": "relative",
			"v": "${file:" + file + ":retention}"}, "Path relative is not absolute"},
		{"env with a path", map[string]string{Key: "env", envP: envClass, "v": "${env:/x:HOME}"},
			"Path is not supported for EnvVarConfigProvider, invalid value '/x'"},
		{"bad allowlist pattern", map[string]string{Key: "env", envP: envClass, "config.providers.env.param.allowlist.pattern": "(", "v": "x"},
			"Invalid value ( for configuration config.providers.env.param.allowlist.pattern"},
	} {
		_, err := Resolve(tc.props)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error starting %q", tc.name, err, tc.want)
		}
	}
}

func TestNoProvidersLeavesPropsAlone(t *testing.T) {
	props := map[string]string{"v": "${file:/x:y}"}
	got, err := Resolve(props)
	if err != nil || got["v"] != "${file:/x:y}" {
		t.Fatalf("%v %v", got, err)
	}
	if !IsProviderKey("config.providers.file.class") || IsProviderKey(Key) || IsProviderKey("log.dirs") {
		t.Fatal("IsProviderKey")
	}
}
