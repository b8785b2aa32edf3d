package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// line is one JSON line of a lane (every lane prints the same): an event or a host's state.
type line struct {
	TS     int64  `json:"ts"` // Unix milliseconds, the lane's clock (the machine's)
	Event  string `json:"event"`
	Host   string `json:"host"`
	OK     *bool  `json:"ok"`
	Errors int64  `json:"errors"`
	Err    string `json:"err"`
}

func (l line) at() time.Time { return time.UnixMilli(l.TS) }

// laneProcess is a running lane: its lines arrive on Lines until it exits.
type laneProcess struct {
	cmd   *exec.Cmd
	Lines chan line
	done  chan struct{}
	log   *os.File
}

// startLane starts l with the cluster's hosts, in a process group of its own, with laneGID as
// its group (the SYN counter's match), its output logged to logDir.
func startLane(l *lane, s *setup, hosts, dc, logDir, tag string) (*laneProcess, error) {
	argv := l.run(l, s)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.peers
	cmd.Env = append(os.Environ(), "PEERS_HOSTS="+hosts, "PEERS_DC="+dc)
	if l.env != nil {
		cmd.Env = append(cmd.Env, l.env(s)...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: laneGID},
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(logDir, tag+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %v: %w", argv, err)
	}
	p := &laneProcess{cmd: cmd, Lines: make(chan line, 4096), done: make(chan struct{}), log: logf}
	go p.read(stdout)
	return p, nil
}

// read forwards each JSON line (every line goes to the log too, stamped with when it arrived).
func (p *laneProcess) read(r io.Reader) {
	defer close(p.Lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fmt.Fprintf(p.log, "%s OUT %s\n", time.Now().UTC().Format("15:04:05.000"), sc.Bytes())
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.TS == 0 {
			continue
		}
		p.Lines <- l
	}
}

// Stop ends the lane: SIGTERM to its group, SIGKILL after 5 s.
func (p *laneProcess) Stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // anything of the group left behind
	for range p.Lines {
	}
	_ = p.log.Close()
}
