package main

import (
	"fmt"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/syncount"
)

// The SYN counter (package syncount): an nftables rule on the output hook counts every TCP SYN
// without ACK (connection attempts, retransmissions included) that a socket of the lane's
// process sends to the cluster's CQL addresses. The lane runs with a group ID of its own
// (laneGID), and the rule matches the sending socket's group, so the harness's own readiness
// probes to the same addresses, and the nodes' traffic among themselves, are not counted.
const laneGID = 4242

// installSYNCounter installs the counter for the nodes' addresses on port.
func installSYNCounter(addrs []string, port int) (*syncount.Counter, error) {
	c, err := syncount.New("cqlcontrol_peers_", laneGID, addrs, port)
	if err != nil {
		return nil, fmt.Errorf("%w (make peers installs the nftables package with apt-get)", err)
	}
	return c, nil
}
