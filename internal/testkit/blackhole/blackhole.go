// Package blackhole cuts a loopback address and port off the way a partition does, with an
// nftables table of the caller's own: every packet to or from a blackholed address and port is
// dropped at the output hook (which loopback traffic passes), so dials time out and established
// connections go silent, instead of being refused. The table is named after a prefix, the
// process ID and a sequence number, so that a table a killed run left behind is recognised and
// removed (RemoveStale).
package blackhole

import (
	"fmt"
	"net"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/nft"
)

// Table is one nftables table of blackholed address and port pairs.
type Table struct{ name string }

// New creates an empty table (nothing dropped) named prefix, the process ID and a sequence
// number, after removing the tables of that prefix whose process is gone. It fails when nft is
// not on PATH or cannot create the table (not root, say).
func New(prefix string) (*Table, error) {
	if err := nft.Available(); err != nil {
		return nil, fmt.Errorf("blackhole: %w", err)
	}
	_ = RemoveStale(prefix) // a table left behind drops nothing new; this run's own table is what matters
	b := &Table{name: nft.TableName(prefix)}
	script := fmt.Sprintf(`table inet %s {
	set holes { type ipv4_addr . inet_service; }
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr . tcp dport @holes drop
		ip saddr . tcp sport @holes drop
	}
}
`, b.name)
	if out, err := nft.Run(script, "-f", "-"); err != nil {
		return nil, fmt.Errorf("blackhole: nft cannot create table %s: %w: %s", b.name, err, out)
	}
	return b, nil
}

// Name returns the table's name.
func (b *Table) Name() string { return b.name }

// Drop blackholes ip:port; ip must be a loopback address.
func (b *Table) Drop(ip, port string) error { return b.element("add", ip, port) }

// Heal lets ip:port through again.
func (b *Table) Heal(ip, port string) error { return b.element("delete", ip, port) }

func (b *Table) element(verb, ip, port string) error {
	if a := net.ParseIP(ip).To4(); a == nil || !a.IsLoopback() {
		return fmt.Errorf("blackhole: %q is not a loopback IPv4 address", ip)
	}
	if out, err := nft.Run("", verb, "element", "inet", b.name, "holes", "{ "+ip+" . "+port+" }"); err != nil {
		return fmt.Errorf("blackhole: nft %s %s:%s: %w: %s", verb, ip, port, err, out)
	}
	return nil
}

// Close deletes the table and checks that it is gone.
func (b *Table) Close() error {
	if err := nft.DeleteTable(b.name); err != nil {
		return fmt.Errorf("blackhole: %w", err)
	}
	if _, err := nft.Run("", "list", "table", "inet", b.name); err == nil {
		return fmt.Errorf("blackhole: nftables table %s is still there", b.name)
	}
	return nil
}

// RemoveStale removes the tables named with prefix whose process is gone (a run killed before
// its cleanup), and returns what it could not remove.
func RemoveStale(prefix string) error { return nft.RemoveStale(prefix) }
