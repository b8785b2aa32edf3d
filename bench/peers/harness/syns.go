package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// The SYN counter: an nftables rule on the output hook counts every TCP SYN (SYN set, ACK
// clear: connection attempts, retransmissions included) that a socket of the lane's process
// sends to the cluster's CQL addresses. The lane runs with a group ID of its own (laneGID), and
// the rule matches the sending socket's group (meta skgid), so the harness's own readiness
// probes to the same addresses, and the nodes' traffic among themselves, are not counted.
const (
	laneGID  = 4242
	nftTable = "cqlcontrol_peers"
)

// synCounter is the nftables table holding the rule and its named counter.
type synCounter struct{}

// installSYNCounter (re)creates the table for the nodes first..last on port.
func installSYNCounter(first, last string, port int) (*synCounter, error) {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, fmt.Errorf("nft is not on PATH (make peers installs the nftables package with apt-get): %w", err)
	}
	_ = exec.Command("nft", "delete", "table", "inet", nftTable).Run()
	script := fmt.Sprintf(`table inet %[1]s {
	counter syns { }
	chain out {
		type filter hook output priority 0; policy accept;
		meta skgid %[2]d ip daddr %[3]s-%[4]s tcp dport %[5]d tcp flags & (syn | ack) == syn counter name syns
	}
}
`, nftTable, laneGID, first, last, port)
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nft: %w: %s", err, out)
	}
	return &synCounter{}, nil
}

var packetsRE = regexp.MustCompile(`packets (\d+)`)

// Read returns the SYNs counted since the table was installed.
func (*synCounter) Read() (int64, error) {
	out, err := exec.Command("nft", "list", "counter", "inet", nftTable, "syns").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("nft list counter: %w: %s", err, out)
	}
	m := packetsRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("nft list counter: no packets in %q", out)
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// Close removes the table.
func (*synCounter) Close() { _ = exec.Command("nft", "delete", "table", "inet", nftTable).Run() }
