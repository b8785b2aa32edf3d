package metrics_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/gocql/gocql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cqlcontrol/cqlcontrol/controlconn"
	"github.com/cqlcontrol/cqlcontrol/metrics"
)

// Every metric wired with one call: ControlConnOptions passes the Collectors as the control
// connection's observers and as the observer of its host-event queue. Handler serves them on
// /metrics; with a Registerer they are also in that registry (prometheus.DefaultRegisterer
// for the process's global /metrics, next to the Go runtime's).
func ExampleCollectors_ControlConnOptions() {
	reg := prometheus.NewRegistry()
	col, err := metrics.New(metrics.Options{Registerer: reg})
	if err != nil {
		log.Fatal(err)
	}
	cadence := controlconn.Cadence{}
	col.SetDelayCap(cadence.WithDefaults().DelayCap)

	cluster := gocql.NewCluster("10.0.0.1", "10.0.0.2", "10.0.0.3")
	cc, err := controlconn.New(cluster, cadence, col.ControlConnOptions()...)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	mux := http.NewServeMux()
	mux.Handle("/metrics", col.Handler())

	// What a scrape sees before Start: the delay cap, and the state gauge at idle.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "cqlcontrol_delay_cap_seconds ") || strings.HasPrefix(line, `cqlcontrol_state{state="idle"}`) {
			fmt.Println(line)
		}
	}
	// Output:
	// cqlcontrol_delay_cap_seconds 30
	// cqlcontrol_state{state="idle"} 1
}
