// Package machine describes the machine a benchmark ran on, for its results (bench/peers and
// bench/fleet write it into results.json).
package machine

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Machine is what the benchmark ran on.
type Machine struct {
	CPUs   int    `json:"cpus"`
	Model  string `json:"cpu_model"`
	MemGiB int    `json:"mem_gib"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
}

// Describe reads this machine's CPU count and model, memory, kernel and Go version.
func Describe() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	m.Model = procField("/proc/cpuinfo", "model name")
	var kb int
	_, _ = fmt.Sscanf(procField("/proc/meminfo", "MemTotal"), "%d", &kb)
	m.MemGiB = (kb + 1<<19) >> 20
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

// procField is the value of the first "key: value" line of a /proc file starting with key.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
