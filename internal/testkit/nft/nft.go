// Package nft runs nft and names the nftables tables of a test or harness: a prefix, the
// process ID and a sequence number, so that a table a killed run left behind is recognised by
// its dead process and removed (RemoveStale). Packages blackhole and syncount build on it.
package nft

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

var seq atomic.Int64

// TableName returns a new table name of prefix for this process.
func TableName(prefix string) string {
	return fmt.Sprintf("%s%d_%d", prefix, os.Getpid(), seq.Add(1))
}

// Available reports why nft cannot be run (nil when it is on PATH).
func Available() error {
	if _, err := exec.LookPath("nft"); err != nil {
		return fmt.Errorf("nft not on PATH: %w", err)
	}
	return nil
}

// Run runs nft with args, stdin (when not empty) on its standard input, and returns its
// combined output.
func Run(stdin string, args ...string) ([]byte, error) {
	cmd := exec.Command("nft", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}

// DeleteTable deletes the inet table name.
func DeleteTable(name string) error {
	if out, err := Run("", "delete", "table", "inet", name); err != nil {
		return fmt.Errorf("removing nftables table %s: %w: %s", name, err, out)
	}
	return nil
}

// RemoveStale removes the inet tables named with prefix (by TableName) whose process is gone,
// and returns what it could not remove.
func RemoveStale(prefix string) error {
	out, err := Run("", "list", "tables", "inet")
	if err != nil {
		return nil
	}
	re := regexp.MustCompile(`(?m)^table inet (` + regexp.QuoteMeta(prefix) + `(\d+)_\d+)$`)
	var errs []error
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		pid, err := strconv.Atoi(m[2])
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if err := DeleteTable(m[1]); err != nil {
			errs = append(errs, fmt.Errorf("stale: %w", err))
		}
	}
	return errors.Join(errs...)
}
