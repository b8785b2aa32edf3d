// Package syncount counts the TCP connection attempts of a group of processes: an nftables rule
// on the output hook (which loopback traffic passes) counts every TCP SYN without ACK
// (connection attempts, retransmissions included) whose sending socket belongs to a group ID
// (meta skgid) and goes to a set of IPv4 addresses on one port. The processes to count run with
// that group ID (syscall.Credential's Gid); everything else on the machine (the harness's own
// probes, the nodes' traffic among themselves) is left out. It needs nft and the right to
// create tables (root).
package syncount

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/nft"
)

// Counter is one nftables table holding the rule and its named counter.
type Counter struct{ name string }

// New installs a counter of the SYNs that sockets of group gid send to addrs (IPv4) on port,
// in a table named prefix, the process ID and a sequence number, after removing the tables of
// prefix whose process is gone.
func New(prefix string, gid int, addrs []string, port int) (*Counter, error) {
	if err := nft.Available(); err != nil {
		return nil, fmt.Errorf("syncount: %w", err)
	}
	if len(addrs) == 0 {
		return nil, errors.New("syncount: no address to count SYNs to")
	}
	for _, a := range addrs {
		if net.ParseIP(a).To4() == nil {
			return nil, fmt.Errorf("syncount: %q is not an IPv4 address", a)
		}
	}
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("syncount: port %d is not a TCP port", port)
	}
	_ = nft.RemoveStale(prefix)
	c := &Counter{name: nft.TableName(prefix)}
	script := fmt.Sprintf(`table inet %s {
	counter syns { }
	chain out {
		type filter hook output priority 0; policy accept;
		meta skgid %d ip daddr { %s } tcp dport %d tcp flags & (syn | ack) == syn counter name syns
	}
}
`, c.name, gid, strings.Join(addrs, ", "), port)
	if out, err := nft.Run(script, "-f", "-"); err != nil {
		return nil, fmt.Errorf("syncount: nft cannot create table %s: %w: %s", c.name, err, out)
	}
	return c, nil
}

var packetsRE = regexp.MustCompile(`packets (\d+)`)

// Read returns the SYNs counted since New.
func (c *Counter) Read() (int64, error) {
	out, err := nft.Run("", "list", "counter", "inet", c.name, "syns")
	if err != nil {
		return 0, fmt.Errorf("syncount: nft list counter: %w: %s", err, out)
	}
	m := packetsRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("syncount: no packet count in %q", out)
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// Name returns the table's name.
func (c *Counter) Name() string { return c.name }

// Close deletes the table.
func (c *Counter) Close() error {
	if err := nft.DeleteTable(c.name); err != nil {
		return fmt.Errorf("syncount: %w", err)
	}
	return nil
}
