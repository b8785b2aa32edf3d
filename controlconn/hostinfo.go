package controlconn

import (
	"fmt"
	"net"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/gocql/gocql"
)

// hostInfo builds the *gocql.HostInfo a user's gocql.HostDialer expects. gocql v1.7.0 exports
// no constructor and no port setter, yet every HostDialer dials host.ConnectAddressAndPort(),
// so the port is written into the unexported field; if a gocql upgrade renames that field the
// dial fails with a clear error rather than dialling port 0.
func hostInfo(ep Endpoint) (*gocql.HostInfo, error) {
	host, portStr, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("endpoint %q is not an IP address", ep.Addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: bad port: %w", ep.Addr, err)
	}
	h := (&gocql.HostInfo{}).SetConnectAddress(ip)
	if ep.HostID != "" {
		h.SetHostID(ep.HostID)
	}
	if !setHostInfoPort(h, port) {
		return nil, fmt.Errorf("cannot set the port of a gocql.HostInfo with this gocql version")
	}
	return h, nil
}

func setHostInfoPort(h *gocql.HostInfo, port int) bool {
	f := reflect.ValueOf(h).Elem().FieldByName("port")
	if !f.IsValid() || f.Kind() != reflect.Int {
		return false
	}
	// h is fresh and not yet shared, so writing without its lock is safe.
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().SetInt(int64(port))
	return h.Port() == port
}
