package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// freeBytes is the free space of the file system holding dir.
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}

// machine describes the host for the report.
func machine() []string {
	var out []string
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				_, v, _ := strings.Cut(line, ":")
				out = append(out, "CPU: "+strings.TrimSpace(v)+", "+strconv.Itoa(runtime.NumCPU())+" cores visible")
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		out = append(out, "Memory: "+strings.Join(strings.Fields(strings.Split(string(b), "\n")[0])[1:], " "))
	}
	out = append(out, "Kernel: "+cmdOut("uname", "-sr"))
	out = append(out, "Disk (file system of the data dirs): "+cmdOut("sh", "-c", "df -hT ${BENCH_DF_DIR:-.} | tail -1"))
	out = append(out, "Go: "+runtime.Version())
	out = append(out, "Java: "+firstLine(cmdOut("java", "-version")))
	return out
}

func cmdOut(name string, args ...string) string {
	b, _ := exec.Command(name, args...).CombinedOutput()
	return strings.TrimSpace(string(b))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
