package realcluster

import (
	"errors"
	"path/filepath"
)

// NodeLayout is one node of a cluster that something other than this package runs (the
// package realcluster/containers runs each node in a container): its address, its directory
// with conf/cassandra.yaml and conf/logback.xml written (data/ and logs/ empty), and the java
// command line that starts it, which is the one Start gives a JVM.
type NodeLayout struct {
	Index int
	IP    string
	Dir   string
	Args  []string // java's arguments
}

// Layout writes cfg's node directories under cfg.Dir (which must be set) as Start does, and
// returns each node's layout; it starts nothing. The java command lines name the jars under
// lib, the directory in which whatever runs the JVM sees the jars of inst (Resolve's).
func Layout(cfg Config, inst Installation, lib string) ([]NodeLayout, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("realcluster: Layout needs Config.Dir")
	}
	jamm, err := inst.jar("jamm-")
	if err != nil {
		return nil, err
	}
	jamm = filepath.Join(lib, filepath.Base(jamm))
	c := &Cluster{cfg: cfg, inst: inst, dir: cfg.Dir}
	for i := range cfg.Nodes {
		c.nodes = append(c.nodes, c.founder(i))
	}
	out := make([]NodeLayout, 0, len(c.nodes))
	for _, n := range c.nodes {
		if err := n.prepare(false); err != nil {
			return nil, err
		}
		out = append(out, NodeLayout{Index: n.index, IP: n.ip, Dir: n.dir, Args: c.jvmArgsWith(n, jamm, lib)})
	}
	return out, nil
}
