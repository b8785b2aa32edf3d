//go:build unix

package cqlsim

import (
	"net"
	"syscall"
)

// setBacklog changes a listening socket's accept-queue length in place (listen(2) on a listening socket
// only updates its backlog). With 0 and one queued connection, the kernel drops further SYNs: clients see
// what a host behind a packet-dropping firewall looks like, a connect that hangs until its timeout.
func setBacklog(ln *net.TCPListener, n int) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), n) }); err != nil {
		return err
	}
	return lerr
}
