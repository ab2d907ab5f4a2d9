package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/freeport"
)

// The three systems measured, in the order each repetition runs them.
const (
	sysGregor = "Gregor"
	sysKafka  = "Kafka"
	sysKfake  = "kfake"
	// sysBefore is an older Gregor binary (BENCH_GREGOR_BEFORE), measured
	// in the same run to show what a change did.
	sysBefore = "Gregor before"
)

var systems = []string{sysGregor, sysKafka, sysKfake}

// env holds what every start needs: paths of the binaries and jars.
type env struct {
	repo      string // repository root
	gregorBin string
	beforeBin string // optional
	kfakeBin  string
	kafkaLibs string // directory of Kafka's jars
	work      string // scratch directory of this run
	runs      int    // counter for fresh directories
	// profileDir, from BENCH_GREGOR_CPUPROFILE, makes every process of
	// this tree's gregor write a CPU profile there (--cpuprofile).
	profileDir string
	profiles   atomic.Int32 // numbers the profiles
}

// freshDir makes a new empty directory under the run's scratch dir.
func (e *env) freshDir(name string) string {
	e.runs++
	d := filepath.Join(e.work, fmt.Sprintf("%03d-%s", e.runs, name))
	must(os.MkdirAll(d, 0o755))
	return d
}

// start starts system name with a fresh (or the given) data dir.
func (e *env) start(name, dataDir string) (*server, string, error) {
	if dataDir == "" {
		dataDir = e.freshDir(strings.ToLower(name))
	}
	switch name {
	case sysGregor, sysBefore:
		s, err := e.startGregorBin(name, dataDir)
		return s, dataDir, err
	case sysKafka:
		s, err := e.startKafka(dataDir, true)
		return s, dataDir, err
	default:
		s, err := e.startKfake(dataDir)
		return s, dataDir, err
	}
}

// restart starts name again on an existing data dir (recovery).
func (e *env) restart(name, dataDir string) (*server, error) {
	switch name {
	case sysGregor:
		return e.startGregor(dataDir)
	case sysKafka:
		return e.startKafka(dataDir, false)
	}
	return nil, fmt.Errorf("%s keeps no data", name)
}

// writeProperties writes Kafka's shipped server.properties with only the
// ports and log.dirs changed, and returns its path and the client port.
func (e *env) writeProperties(dataDir string) (string, int, error) {
	ports, err := freeport.Ports(2)
	if err != nil {
		return "", 0, err
	}
	path, err := e.writeNodeProperties(dataDir, 1, ports[0], ports[1], "")
	return path, ports[0], err
}

// writeNodeProperties writes Kafka's shipped server.properties for node id
// with client port port and controller port ctl. With voters set (a
// three-node cluster, "1@host:port,..."), node.id is id and the static
// controller.quorum.voters replaces the single controller's
// controller.quorum.bootstrap.servers; nothing else changes.
func (e *env) writeNodeProperties(dataDir string, id, port, ctl int, voters string) (string, error) {
	src, err := os.Open(filepath.Join(e.repo, "bench/kafka/server.properties"))
	if err != nil {
		return "", err
	}
	defer src.Close()
	var out strings.Builder
	sc := bufio.NewScanner(src)
	for sc.Scan() {
		line := sc.Text()
		key, _, _ := strings.Cut(line, "=")
		switch key {
		case "listeners", "advertised.listeners":
			line = fmt.Sprintf("%s=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", key, port, ctl)
		case "controller.quorum.bootstrap.servers":
			line = fmt.Sprintf("%s=127.0.0.1:%d", key, ctl)
			if voters != "" {
				line = "controller.quorum.voters=" + voters
			}
		case "node.id":
			line = fmt.Sprintf("node.id=%d", id)
		case "log.dirs":
			line = "log.dirs=" + filepath.Join(dataDir, "logs")
		}
		out.WriteString(line + "\n")
	}
	path := filepath.Join(dataDir, "server.properties")
	return path, os.WriteFile(path, []byte(out.String()), 0o644)
}

func (e *env) startGregor(dataDir string) (*server, error) {
	return e.startGregorBin(sysGregor, dataDir)
}

func (e *env) startGregorBin(name, dataDir string) (*server, error) {
	props, port, err := e.writeProperties(dataDir)
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	if name == sysBefore {
		cmd = exec.Command(e.beforeBin, "serve", props)
	} else {
		cmd = e.gregorCommand(props)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return startProcess(name, addr, cmd, filepath.Join(dataDir, "gregor.out"), 2*time.Minute)
}

// gregorCommand is `gregor serve props` of this tree's binary, with
// --cpuprofile when profiles are asked for.
func (e *env) gregorCommand(props string) *exec.Cmd {
	cmd := exec.Command(e.gregorBin, "serve", props)
	if e.profileDir != "" {
		file := filepath.Join(e.profileDir, fmt.Sprintf("gregor-%03d.pprof", e.profiles.Add(1)))
		cmd.Args = append(cmd.Args, "--cpuprofile", file)
	}
	return cmd
}

func (e *env) startKfake(dataDir string) (*server, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(e.kfakeBin, "-port", fmt.Sprint(port))
	return startProcess(sysKfake, addr, cmd, filepath.Join(dataDir, "kfake.out"), time.Minute)
}
