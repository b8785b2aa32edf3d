package machine

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDescribe(t *testing.T) {
	m := Describe()
	assert.Equal(t, runtime.NumCPU(), m.CPUs)
	assert.Equal(t, runtime.Version(), m.Go)
	if runtime.GOOS == "linux" {
		assert.Positive(t, m.MemGiB, "MemTotal read from /proc/meminfo")
		assert.Contains(t, m.Kernel, "Linux ")
	}
	assert.Empty(t, procField("/nonexistent", "x"))
}
