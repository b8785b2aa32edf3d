// Command fleet measures a fleet's return on real Apache Cassandra (docs/fleet.md): K
// independent clients, each its own gocql ClusterConfig and Session (and, in the cqlcontrol
// lanes, its own ControlConnection and governor), spread over OS processes of GOMAXPROCS=1,
// logging in with PasswordAuthenticator as a role of bcrypt cost 10 or 12, through faults of the
// node: SIGKILL then restart, and the native transport off for 30 s (nodetool disablebinary).
// With -nodes 3 the cluster has three nodes and the fault hits nodes 2 and 3 only. Beside the
// fleet the coordinator runs a canary client (canary.go). It writes results.json and prints
// the table.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/machine"
	"github.com/cqlcontrol/cqlcontrol/internal/testkit/syncount"
	"github.com/cqlcontrol/cqlcontrol/realcluster"
)

// workerEnv marks a worker process (the coordinator's binary, or the test binary, run again).
const workerEnv = "CQLCONTROL_FLEET_WORKER"

// unservedTraces is how many clients left unserved each worker process prints the trace of.
const unservedTraces = 5

const (
	user     = "fleet"
	password = "fleet-password"
)

func main() {
	var (
		worker     = flag.Bool("worker", false, "run as one worker process (the coordinator starts them)")
		tableOnly  = flag.Bool("table", false, "print the table of the results file (-out) and exit")
		chartOnly  = flag.Bool("chart", false, "draw the chart of the results file (-out) as -chart-path .png and .svg, and exit")
		chartPath  = flag.String("chart-path", "", "the chart's path without extension (.png and .svg are written); by default fleet beside results.json, else -out's path without its extension")
		laneFlag   = flag.String("lanes", strings.Join(defaultLanes, ","), "lanes, comma-separated: "+strings.Join(laneNames(), ", "))
		ksFlag     = flag.String("k", "100,300", "fleet sizes K, comma-separated")
		costsFlag  = flag.String("costs", "10", "bcrypt costs of the fleet's role, comma-separated")
		faultsFlag = flag.String("faults", "kill,disablebinary", "faults: kill (SIGKILL, restart at once), stop (graceful stop, restart at once), disablebinary (30 s off), rolling (with -nodes 3: nodes 2 and 3 stopped and restarted one after the other)")
		perProc    = flag.Int("per-process", 100, "clients per worker process")
		binaryOff  = flag.Duration("binary-off", 30*time.Second, "how long disablebinary keeps the native transport off")
		rollSettle = flag.Duration("roll-settle", 10*time.Second, "rolling: the wait after a node answers CQL before the next node stops")
		tail       = flag.Duration("tail", 10*time.Second, "how long setups and logins still count after every client serves")
		capAfter   = flag.Duration("cap", 180*time.Second, "how long after the node answers CQL to wait for every client")
		oursCap    = flag.Duration("ours-cap", 6*time.Minute, "cqlcontrol lanes: how long after the node answers CQL to wait for every client's own control connection (after the count)")
		baseIP     = flag.String("ip", "127.0.0.111", "the node's loopback address (node i of -nodes on this address + i)")
		nodes      = flag.Int("nodes", 1, "nodes in the cluster: 1, or 3 (the fault hits nodes 2 and 3, never node 1)")
		out        = flag.String("out", "results.json", "results file (rows of the same lane, fault, K, cost and nodes are replaced)")
		retFloor   = flag.Int("return-floor", 0, "measure the return floor instead of running lanes: this many SIGKILL restarts per cost, each followed by 8 clients logging in back to back from the node answering CQL (one node only)")
		retWindow  = flag.Duration("return-window", time.Minute, "-return-floor: how long after the node answers each sample logs in")
		retConc    = flag.Int("return-conc", returnFloorConc, "-return-floor: how many clients log in back to back")
		loadFlag   = flag.String("login-load", "", "measure the login load instead of running lanes: the canary alone, then beside logins paced at each of these shares of the idle floor, comma-separated (e.g. 0.5,0.77,1; one node only)")
		loadWindow = flag.Duration("load-window", loadWindowDefault, "-login-load: the canary's steady windows (before and after), and each share's")
		loadWarm   = flag.Duration("load-warm", loadWarmDefault, "-login-load: how long the canary queries before its steady window")
		loadQPS    = flag.Int("load-qps", 0, "-login-load: queries a second of one more session beside the canary throughout (as a fleet's served clients query: 300 for K = 300); 0 for none")
		nodeOpts   []string
		// The worker's own flags.
		wHost   = flag.String("host", "", "worker: the nodes' addresses, comma-separated (the clients' contact points)")
		wPort   = flag.Int("port", 9042, "worker: the native port")
		wN      = flag.Int("n", 0, "worker: clients")
		wLane   = flag.String("lane", "", "worker: lane")
		wUser   = flag.String("user", user, "worker: role")
		wPass   = flag.String("password", password, "worker: password")
		waitEv  = flag.Duration("wait-every", 100*time.Millisecond, "a client's query interval while it waits to serve")
		serveEv = flag.Duration("serve-every", time.Second, "a client's query interval while it serves")
	)
	flag.Func("node-opt", "a JVM option appended to every node's command line (repeat the flag for more), e.g. -node-opt=-Xlog:jit+compilation=debug:file=/tmp/jit-%p.log:uptime,time", func(o string) error {
		nodeOpts = append(nodeOpts, o)
		return nil
	})
	flag.Parse()
	*chartPath = defaultChartPath(*chartPath, *out)
	if *worker {
		if err := runWorker(*wLane, split(*wHost), *wPort, *wN, *wUser, *wPass, *waitEv, *serveEv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *tableOnly || *chartOnly {
		res, err := readResults(*out)
		if err != nil {
			fatal(err)
		}
		if *tableOnly {
			fmt.Println(table(res.Rows, res.Floors))
			fmt.Print(returnFloorLines(res.ReturnFloors))
			fmt.Print(loginLoadLines(res.LoginLoads))
		}
		if *chartOnly {
			if err := writeFleetChart(res, *chartPath); err != nil {
				fatal(err)
			}
		}
		return
	}
	handleInterrupts(*out)
	if err := validNodeOpts(nodeOpts); err != nil {
		fatal(err)
	}
	if err := validNodes(*nodes); err != nil {
		fatal(err)
	}
	if err := validDurations(map[string]time.Duration{"cap": *capAfter, "ours-cap": *oursCap, "binary-off": *binaryOff,
		"roll-settle": *rollSettle, "tail": *tail, "wait-every": *waitEv, "serve-every": *serveEv, "return-window": *retWindow,
		"load-window": *loadWindow, "load-warm": *loadWarm}); err != nil {
		fatal(err)
	}
	if err := validReturnFloor(*retFloor, *retConc, *nodes); err != nil {
		fatal(err)
	}
	shares, err := parseShares(*loadFlag)
	if err == nil {
		err = validLoginLoad(shares, *nodes, *retFloor)
	}
	if err == nil && (*loadQPS < 0 || *loadQPS > 10000) {
		err = fmt.Errorf("-load-qps %d: want 0 to 10000 queries a second", *loadQPS)
	}
	if err != nil {
		fatal(err)
	}
	plan := plan{tail: *tail, lanes: split(*laneFlag), faults: split(*faultsFlag), perProc: *perProc, binaryOff: *binaryOff,
		rollSettle: *rollSettle, capAfter: *capAfter, oursCap: *oursCap, ip: *baseIP, nodes: *nodes, waitEvery: *waitEv, serveEvery: *serveEv,
		returnSamples: *retFloor, returnWindow: *retWindow, returnConc: *retConc, nodeOpts: nodeOpts, loadShares: shares, loadWindow: *loadWindow, loadWarm: *loadWarm, loadQPS: *loadQPS}
	for _, k := range split(*ksFlag) {
		plan.ks = append(plan.ks, atoi(k))
	}
	for _, c := range split(*costsFlag) {
		plan.costs = append(plan.costs, atoi(c))
	}
	for _, l := range plan.lanes {
		if _, err := laneByName(l); err != nil {
			fatal(err)
		}
	}
	for _, f := range plan.faults {
		if err := validFault(f, plan.nodes); err != nil {
			fatal(err)
		}
	}
	res, err := run(plan, func(r Row, so *Results) {
		fmt.Println(r.line())
		// Each row is written as it is measured: an interrupted run keeps what it measured.
		part := *so
		part.Rows = slices.Clone(so.Rows)
		part.Floors = maps.Clone(so.Floors)
		part.ReturnFloors = maps.Clone(so.ReturnFloors)
		part.LoginLoads = maps.Clone(so.LoginLoads)
		if err := merge(*out, &part); err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
		}
	})
	if res != nil {
		// The rows measured so far are kept even when a later one failed.
		if merr := merge(*out, res); merr != nil {
			err = errors.Join(err, merr)
		}
	}
	if err != nil {
		fatal(err)
	}
	// The chart is of the whole file: the rows of earlier runs merged with these.
	all, err := readResults(*out)
	if err == nil && len(all.Rows) > 0 {
		err = writeFleetChart(all, *chartPath)
	}
	if err != nil {
		fatal(fmt.Errorf("chart: %w", err))
	}
	fmt.Println(table(res.Rows, res.Floors))
	fmt.Print(returnFloorLines(res.ReturnFloors))
	fmt.Print(loginLoadLines(res.LoginLoads))
	awaitInterrupt()
}

type plan struct {
	lanes, faults       []string
	ks, costs           []int
	perProc             int
	binaryOff, capAfter time.Duration
	// oursCap is how long after the node answers the cqlcontrol lanes wait, after the count,
	// for every client's own control connection to be back (Row.OursT100).
	oursCap time.Duration
	// rollSettle is the rolling fault's wait after a node answers before the next one stops.
	rollSettle time.Duration
	ip         string
	// nodes is the cluster's size: 1, or 3 (validNodes).
	nodes                 int
	waitEvery, serveEvery time.Duration
	// settle is the pause before each fault; floorWarm and floorWindow the floor's measurement.
	settle, floorWarm, floorWindow time.Duration
	// tail is how long after every client serves (or the cap) setups and logins still count.
	tail time.Duration
	// canaryEvery is the canary's query interval, canarySteady its steady window before the
	// fault (canary.go's constants unless set, shorter in tests).
	canaryEvery, canarySteady time.Duration
	// java is the java lane's runtime (prepareJava); nil when the run has no java lane.
	java *javaRuntime
	// returnSamples, when not 0, makes the run measure the return floor (ReturnFloor) that
	// many times per cost instead of running lanes; returnWindow is each sample's length.
	returnSamples int
	returnWindow  time.Duration
	returnConc    int
	// nodeOpts are JVM options appended to every node's command line (-node-opt).
	nodeOpts []string
	// loadShares, when set, makes the run measure the login load (LoginLoad) at each share of
	// the idle floor instead of running lanes; loadWindow is the canary's steady window and
	// each share's.
	loadShares []float64
	loadWindow time.Duration
	// loadWarm is how long the canary queries before its steady window; loadQPS the queries a
	// second of another session beside it throughout (0: none).
	loadWarm time.Duration
	loadQPS  int
}

func (p plan) withDefaults() plan {
	if p.perProc == 0 {
		p.perProc = 100
	}
	if p.binaryOff == 0 {
		p.binaryOff = 30 * time.Second
	}
	if p.rollSettle == 0 {
		p.rollSettle = 10 * time.Second
	}
	if p.oursCap == 0 {
		p.oursCap = 6 * time.Minute
	}
	if p.capAfter == 0 {
		p.capAfter = 180 * time.Second
	}
	if p.waitEvery == 0 {
		p.waitEvery = 100 * time.Millisecond
	}
	if p.serveEvery == 0 {
		p.serveEvery = time.Second
	}
	if p.settle == 0 {
		p.settle = 5 * time.Second
	}
	if p.tail == 0 {
		p.tail = 10 * time.Second
	}
	if p.floorWarm == 0 {
		p.floorWarm = 3 * time.Second
	}
	if p.floorWindow == 0 {
		p.floorWindow = 10 * time.Second
	}
	if p.nodes == 0 {
		p.nodes = 1
	}
	if p.returnWindow == 0 {
		p.returnWindow = time.Minute
	}
	if p.returnConc == 0 {
		p.returnConc = returnFloorConc
	}
	if p.loadWindow == 0 {
		p.loadWindow = loadWindowDefault
	}
	if p.loadWarm == 0 {
		p.loadWarm = loadWarmDefault
	}
	if p.canaryEvery == 0 {
		p.canaryEvery = canaryEvery
	}
	if p.canarySteady == 0 {
		p.canarySteady = canarySteady
	}
	return p
}

// defaultChartPath is the chart's path (without extension): chart if set; "fleet" beside the
// checked-in results.json; else out without its extension, so that a scratch run's -out never
// overwrites the checked-in chart.
func defaultChartPath(chart, out string) string {
	switch {
	case chart != "":
		return chart
	case filepath.Clean(out) == "results.json":
		return "fleet"
	}
	return strings.TrimSuffix(out, filepath.Ext(out))
}

// validReturnFloor accepts -return-floor's sample count: none, or some on one node (the
// node restarted is the node measured).
func validReturnFloor(samples, conc, nodes int) error {
	switch {
	case samples < 0:
		return fmt.Errorf("-return-floor %d: want a count of samples, 0 or more", samples)
	case conc < 1:
		return fmt.Errorf("-return-conc %d: want at least 1 client", conc)
	case samples > 0 && nodes != 1:
		return fmt.Errorf("-return-floor with -nodes %d: the return floor is measured on one node", nodes)
	}
	return nil
}

// validNodeOpts checks the -node-opt values: each is one JVM option, starting with '-'.
func validNodeOpts(opts []string) error {
	for _, o := range opts {
		if !strings.HasPrefix(o, "-") || strings.ContainsAny(o, " \t\n") {
			return fmt.Errorf("-node-opt %q: want one JVM option starting with '-' (repeat the flag for more)", o)
		}
	}
	return nil
}

// returnFloorConc is how many clients log in back to back in a return floor's sample by default:
// twice the node's 4 auth threads, as the idle floor.
const returnFloorConc = 8

// measureReturnFloors SIGKILLs and restarts the node p.returnSamples times and measures
// what it offers from answering CQL on (ReturnFloor), into res.ReturnFloors[cost].
func measureReturnFloors(c *realcluster.Cluster, p plan, cost int, res *Results) error {
	ks := []int{100, 300, 1000}
	for _, k := range p.ks {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	key := strconv.Itoa(cost)
	res.ReturnFloors[key] = nil
	for i := range p.returnSamples {
		if err := c.Kill(0); err != nil {
			return err
		}
		if err := c.Start(context.Background(), 0); err != nil {
			return err
		}
		cpu0, jit0 := serverCPU(c), serverJITCPU(c)
		oks, failed := measureReturn(c.Node(0).Addr(), user, password, p.returnConc, c.ReadyAt(0), p.returnWindow)
		rf := returnFloor(cost, oks, failed, p.returnConc, p.returnWindow, ks)
		rf.ServerCPUS = round2((serverCPU(c) - cpu0).Seconds())
		rf.JITCPUS = round2((serverJITCPU(c) - jit0).Seconds())
		if rf.Logins > 0 {
			rf.CPUPerLoginMs = math.Round(rf.ServerCPUS * 1000 / float64(rf.Logins))
		}
		res.ReturnFloors[key] = append(res.ReturnFloors[key], rf)
		fmt.Fprintf(os.Stderr, "return floor at bcrypt cost %d, sample %d of %d: %s\n", cost, i+1, p.returnSamples, rf.line())
	}
	return nil
}

// validNodes accepts the cluster sizes the harness knows how to fault: 1 (the node is the
// fault) and 3 (nodes 2 and 3 are, node 1 stays up for the canary).
func validNodes(n int) error {
	if n != 1 && n != 3 {
		return fmt.Errorf("-nodes %d: want 1 (one node, faulted) or 3 (nodes 2 and 3 faulted, node 1 never)", n)
	}
	return nil
}

// validDurations reports every flag of durations (by name, without its dash) that is not
// positive: each is a wait, and zero or less would end it before it began.
func validDurations(d map[string]time.Duration) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(d)) {
		if d[name] <= 0 {
			errs = append(errs, fmt.Errorf("-%s %v: want a positive duration", name, d[name]))
		}
	}
	return errors.Join(errs...)
}

// faultedNodes are the indexes (from 0) of the nodes a fault hits in a cluster of nodes: the
// only node, or every node but the first, which the canary is pinned to.
// fleetHosts is the nodes the fleet's clients use, of all (the cluster's hosts): the faulted
// ones (faultedNodes). With 3 nodes the fleet is on nodes 2 and 3 only, so that it loses
// service when they go and its return is theirs, while the canary serves from node 1: a
// fleet with node 1 among its hosts would keep serving through it, and would have no return
// to measure.
func fleetHosts(all []string, nodes int) []string {
	var out []string
	for _, i := range faultedNodes(nodes) {
		if i < len(all) {
			out = append(out, all[i])
		}
	}
	return out
}

func faultedNodes(nodes int) []int {
	if nodes <= 1 {
		return []int{0}
	}
	var out []int
	for i := 1; i < nodes; i++ {
		out = append(out, i)
	}
	return out
}

// validFault accepts the faults runFault knows, on a cluster of nodes: a rolling restart
// needs a node that stays up while another restarts, so more than one faulted node.
func validFault(f string, nodes int) error {
	switch f {
	case "kill", "stop", "disablebinary":
		return nil
	case "rolling":
		if len(faultedNodes(nodes)) < 2 {
			return fmt.Errorf("fault rolling needs -nodes 3 (nodes 2 and 3 restarted one after the other); with %d node it is the stop fault", nodes)
		}
		return nil
	}
	return fmt.Errorf("no fault %q (have kill, stop, disablebinary, rolling)", f)
}

// restartsJVM reports whether fault restarts the faulted nodes' JVMs (their counters start
// from zero again).
func restartsJVM(fault string) bool { return fault != "disablebinary" }

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func atoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		fatal(err)
	}
	return v
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "fleet:", err)
	awaitInterrupt()
	os.Exit(1)
}

// Results is results.json.
type Results struct {
	Cassandra string           `json:"cassandra"`
	Machine   machine.Machine  `json:"machine"`
	Floors    map[string]Floor `json:"floors"` // by bcrypt cost
	// ReturnFloors is by bcrypt cost: the samples of the latest -return-floor run at that cost.
	ReturnFloors map[string][]ReturnFloor `json:"return_floors,omitempty"`
	// LoginLoads is by bcrypt cost: the shares of the latest -login-load run at that cost.
	LoginLoads map[string][]LoginLoad `json:"login_loads,omitempty"`
	Rows       []Row                  `json:"rows"`
	Notes      map[string]string      `json:"notes,omitempty"`
}

// Floor is the node's login throughput with the fleet's role.
type Floor struct {
	Cost          int     `json:"bcrypt_cost"`
	LoginsPerSec  float64 `json:"logins_per_second"`
	MeasuredUnder string  `json:"measured_under"`
}

// Row is one lane through one fault at one K and cost.
type Row struct {
	Lane      string `json:"lane"`
	Fault     string `json:"fault"`
	K         int    `json:"k"`
	Cost      int    `json:"bcrypt_cost"`
	Processes int    `json:"processes"`
	// T50, T95, T100: seconds from the node answering CQL to a client's first successful
	// query, over the clients (T100 the last; -1 when some never served within the cap).
	T50      float64 `json:"t50_s"`
	T95      float64 `json:"t95_s"`
	T100     float64 `json:"t100_s"`
	Unserved int     `json:"unserved"`
	// NotServingAtFault is the clients whose latest query had failed when the fault began
	// (the harness waits up to the cap for every client to serve first): a row whose fleet
	// was not whole at its start says so.
	NotServingAtFault int    `json:"not_serving_at_fault,omitempty"`
	Setups            setups `json:"setups"`
	// ServerLogins is the logins the node checked during the fault and return (one bcrypt
	// check each), the canary's own left out: ClientMetrics' AuthSuccess + AuthFailure.
	// AuthTasks is the auth executor's completed tasks over the same span (nodetool tpstats),
	// which also counts the AUTH_RESPONSEs the node dropped unchecked (more than ServerLogins
	// in a herd).
	ServerLogins int64 `json:"server_logins"`
	AuthSuccess  int64 `json:"auth_success"`
	AuthFailure  int64 `json:"auth_failure"`
	AuthTasks    int64 `json:"auth_tasks"`
	// Wasted is ServerLogins minus the setups that had succeeded when the counters were read
	// (the logins clients kept; Setups.OKAtRead). A setup kept while they were read (Setups.OK
	// − Setups.OKAtRead) may be in ServerLogins: Wasted counts it as wasted, so the logins truly
	// wasted are between Wasted minus those and Wasted. Rows measured before OKAtRead was
	// recorded subtracted every setup kept until the report instead (Setups.OKAtRead 0).
	Wasted int64 `json:"wasted_logins"`
	// FloorServing and FloorConnected: K ÷ the floor and K × the lane's connections ÷ the floor.
	FloorServing   float64 `json:"floor_serving_s"`
	FloorConnected float64 `json:"floor_connected_s"`
	ServerCPU      float64 `json:"server_cpu_s"`
	// ServerJITCPU is the part of ServerCPU the nodes' JIT compiler threads took (at least:
	// realcluster's Node.JITCPU): a restarted JVM compiles the paths of whatever the fleet
	// sends it, on the cores its logins need (docs/fleet.md, "Where the node's CPU went").
	ServerJITCPU float64 `json:"server_jit_cpu_s,omitempty"`
	FleetCPU     float64 `json:"fleet_cpu_s"`
	// Window is from the node answering CQL to the count (every client serving, or the cap,
	// then the tail).
	Window float64 `json:"window_s"`
	// FirstOK is each client's time to serve in seconds (sorted; -1: never within the cap).
	FirstOK []float64 `json:"first_ok_s,omitempty"`
	// ReadyAfterFaultS is the time from the fault (the workers told "down") to the node
	// answering CQL: setups.per_second counts from the fault, the T columns from the answer.
	// Absent (0) in rows measured before it was recorded.
	ReadyAfterFaultS float64 `json:"ready_after_fault_s,omitempty"`
	// ReturnLoginRate is the logins per second the node completed for the fleet during the
	// return: the setups that succeeded from the node answering CQL to T100 (the last client
	// serving), divided by T100. FloorAtReturnRate is K ÷ it: the serving floor at the rate
	// the node actually kept up after the fault, beside FloorServing's idle rate. Absent (0)
	// in rows measured before they were recorded, and when some client never served.
	ReturnLoginRate   float64 `json:"return_logins_per_s,omitempty"`
	FloorAtReturnRate float64 `json:"floor_at_return_rate_s,omitempty"`
	// Nodes is the cluster's size; absent (0) means 1, as in every row measured before it was
	// recorded. With 3 the fault hit nodes 2 and 3 (at once), and "the node answering CQL" (the
	// T columns' zero, ReadyAfterFaultS, Window) is the last of them answering again; the
	// server logins, auth tasks and server CPU are summed over the three nodes; the floors
	// are still node 1's login throughput alone.
	Nodes int `json:"nodes,omitempty"`
	// The canary (canary.go): one client beside the fleet, pinned to node 1 with 3 nodes,
	// querying every 100 ms. Steady is the last 10 s before the fault; the return is from the
	// node(s) answering CQL until the last fleet client served, or the cap (a rolling restart's:
	// from the first node's stop to the count, canaryReturnWindow). Percentiles are of
	// every query begun in the window, a failed one at its elapsed time; CanaryErrors and
	// CanaryQueries are the return window's. Absent (0) in rows measured before the canary;
	// the return's are absent too when the window is empty (every client served before the
	// node(s) answered).
	CanarySteadyP50Ms float64 `json:"canary_steady_p50_ms,omitempty"`
	CanarySteadyP99Ms float64 `json:"canary_steady_p99_ms,omitempty"`
	CanaryReturnP50Ms float64 `json:"canary_return_p50_ms,omitempty"`
	CanaryReturnP99Ms float64 `json:"canary_return_p99_ms,omitempty"`
	CanaryErrors      int     `json:"canary_errors,omitempty"`
	CanaryQueries     int     `json:"canary_queries,omitempty"`
	// QueryFailures is the fleet's failed queries from the fault to the count. GapP50S,
	// GapP95S, GapMaxS: over the clients, each client's longest time without a successful
	// query that ended after the fault (from its last success before it): a client's outage
	// as its application saw it, the measure of a rolling restart, where the fleet keeps a
	// node throughout. Absent (0) in rows measured before they were recorded.
	QueryFailures int64   `json:"query_failures,omitempty"`
	GapP50S       float64 `json:"gap_p50_s,omitempty"`
	GapP95S       float64 `json:"gap_p95_s,omitempty"`
	GapMaxS       float64 `json:"gap_max_s,omitempty"`
	// OursT50, OursT95, OursT100: the cqlcontrol lanes' time from the node answering CQL to
	// each client's own control connection's first successful setup, waited for after the count
	// up to -ours-cap (OursNotBack were not back then; OursT100 is -1). A served client's
	// connection waits out the governor's served pause (up to dialgate.ServedMax), so it
	// may come back long after the client serves. Absent (0) in other lanes and in rows
	// measured before it was recorded.
	OursT50     float64 `json:"ours_t50_s,omitempty"`
	OursT95     float64 `json:"ours_t95_s,omitempty"`
	OursT100    float64 `json:"ours_t100_s,omitempty"`
	OursNotBack int     `json:"ours_not_back,omitempty"`
	OursWindow  float64 `json:"ours_window_s,omitempty"` // how long after the node answered the wait ended
	// SYNs is the fleet's connection attempts (syns.go); absent when they were not counted
	// (no nftables, or a row measured before they were).
	SYNs *SYNs `json:"syns,omitempty"`
}

// nodes is the row's cluster size (rows measured before it was recorded had one node).
func (r Row) nodes() int { return max(1, r.Nodes) }

// hasCanary reports whether the row was measured with the canary: its steady window always
// has queries, and a query's latency is never 0 at 0.01 ms.
func (r Row) hasCanary() bool { return r.CanarySteadyP50Ms > 0 }

// setCanary sets the row's canary figures from its steady and return windows.
func (r *Row) setCanary(steady, ret canaryStats) {
	r.CanarySteadyP50Ms, r.CanarySteadyP99Ms = steady.P50Ms, steady.P99Ms
	r.CanaryReturnP50Ms, r.CanaryReturnP99Ms = ret.P50Ms, ret.P99Ms
	r.CanaryErrors, r.CanaryQueries = ret.Errors, ret.Queries
}

// returnRate sets r's ReturnLoginRate and FloorAtReturnRate from its setups and T100.
func (r *Row) returnRate() {
	if r.T100 <= 0 || r.ReadyAfterFaultS <= 0 || len(r.Setups.OKPerSecond) == 0 {
		return
	}
	from, to := r.ReadyAfterFaultS, r.ReadyAfterFaultS+r.T100
	var ok float64
	for i, v := range r.Setups.OKPerSecond {
		// The part of second [i, i+1) inside [from, to], counts spread evenly over it.
		if part := min(float64(i+1), to) - max(float64(i), from); part > 0 {
			ok += float64(v) * part
		}
	}
	if ok > 0 {
		r.ReturnLoginRate = round2(ok / r.T100)
		r.FloorAtReturnRate = round2(float64(r.K) / r.ReturnLoginRate)
	}
}

func (r Row) line() string {
	nodes := ""
	if r.nodes() > 1 {
		nodes = fmt.Sprintf("  nodes=%d", r.nodes())
	}
	canary := ""
	if r.hasCanary() {
		canary = fmt.Sprintf("  canary p50/p99 steady %.2f/%.2f ms, return %.2f/%.2f ms (%d queries, %d failed)",
			r.CanarySteadyP50Ms, r.CanarySteadyP99Ms, r.CanaryReturnP50Ms, r.CanaryReturnP99Ms, r.CanaryQueries, r.CanaryErrors)
	}
	return fmt.Sprintf("%-20s %-13s K=%-5d cost=%d%s  T50 %6.2f  T95 %6.2f  T100 %6.2f  unserved %d (%d not serving at the fault)  setups %d (ok %d, failed %d, timed out %d)  server logins %d (auth tasks %d)  wasted %s  floors %.1f/%.1f s  return %.1f logins/s (floor %.1f s)  SYNs outage/return %s  cpu server %s fleet %.1f s  query failures %d, gap p50/p95/max %.2f/%.2f/%.2f s%s",
		r.Lane, r.Fault, r.K, r.Cost, nodes, r.T50, r.T95, r.T100, r.Unserved, r.NotServingAtFault, r.Setups.Started, r.Setups.OK, r.Setups.Failed, r.Setups.TimedOut,
		r.ServerLogins, r.AuthTasks, wastedCell(r), r.FloorServing, r.FloorConnected, r.ReturnLoginRate, r.FloorAtReturnRate, synCell(r), cpuCell(r), r.FleetCPU,
		r.QueryFailures, r.GapP50S, r.GapP95S, r.GapMaxS, canary) + "  ours back T50/T95/T100 " + oursCell(r)
}

// run starts one cluster (of p.nodes nodes) per cost (the role's hash decides the cost),
// measures the floor on node 1, then takes each lane and K through each fault.
func run(p plan, each func(Row, *Results)) (*Results, error) {
	p = p.withDefaults()
	if err := validNodes(p.nodes); err != nil {
		return nil, err
	}
	if slices.Contains(p.lanes, javaLane) && p.java == nil {
		j, err := prepareJava()
		if err != nil {
			return nil, err
		}
		p.java = &j
	}
	res := &Results{Machine: machine.Describe(), Floors: map[string]Floor{}, ReturnFloors: map[string][]ReturnFloor{}, LoginLoads: map[string][]LoginLoad{}}
	for _, cost := range p.costs {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
		if err != nil {
			return res, err
		}
		dir, err := os.MkdirTemp("", "cqlcontrol-fleet-")
		if err != nil {
			return res, err
		}
		forgetDir := atInterrupt(func() { _ = os.RemoveAll(dir) })
		c, err := realcluster.Start(context.Background(), realcluster.Config{
			Nodes: p.nodes, BaseIP: p.ip, Dir: dir, PasswordAuth: true, SuperuserSetupDelay: 500 * time.Millisecond,
			Roles: []realcluster.Role{{Name: user, HashedPassword: string(hash)}},
			// The fleet's role on every node: a login on a returning node does not wait for
			// another one that may be down too.
			AuthReplication: p.nodes,
			JVMOptions:      p.nodeOpts,
			Logf:            func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
		})
		if err != nil {
			forgetDir()
			_ = os.RemoveAll(dir)
			return res, err
		}
		res.Cassandra = c.Version()
		syn := installSYNCounter(c)
		unregister := atInterrupt(func() {
			_ = c.Close()
			if syn != nil {
				_ = syn.Close()
			}
			_ = os.RemoveAll(dir)
		})
		err = func() error {
			floor, err := measureFloor(c.Node(0).Addr(), user, password, 8, p.floorWarm, p.floorWindow)
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			res.Floors[strconv.Itoa(cost)] = Floor{Cost: cost, LoginsPerSec: math.Round(floor*10) / 10,
				MeasuredUnder: fmt.Sprintf("8 clients logging in back to back for %v (after %v), raw CQL v4, nothing else running", p.floorWindow, p.floorWarm)}
			fmt.Fprintf(os.Stderr, "floor at bcrypt cost %d: %.1f logins/s\n", cost, floor)
			if p.returnSamples > 0 {
				return measureReturnFloors(c, p, cost, res)
			}
			if len(p.loadShares) > 0 {
				return measureLoginLoads(c, p, cost, floor, res)
			}
			for _, k := range p.ks {
				for _, l := range p.lanes {
					rows, err := runLane(c, syn, p, l, k, cost, floor)
					for _, r := range rows {
						res.Rows = append(res.Rows, r)
						each(r, res)
					}
					if err != nil {
						return fmt.Errorf("%s K=%d: %w", l, k, err)
					}
				}
			}
			return nil
		}()
		unregister()
		cerr := c.Close()
		if syn != nil {
			cerr = errors.Join(cerr, syn.Close())
		}
		forgetDir()
		_ = os.RemoveAll(dir)
		if err = errors.Join(err, cerr); err != nil {
			return res, err
		}
	}
	return res, nil
}

// workerProc is one running worker.
type workerProc struct {
	cmd   *exec.Cmd
	stdin interface {
		WriteString(string) (int, error)
		Flush() error
	}
	in    interface{ Close() error }
	lines chan workerLine
	log   *os.File
	n     int // its clients
}

func (w *workerProc) send(cmd string) {
	_, _ = w.stdin.WriteString(cmd + "\n")
	_ = w.stdin.Flush()
}

// startWorkers starts the fleet: K clients of lane over ceil(K/perProc) processes.
// With synGroup the workers run with fleetGID as their group, the SYN counter's match.
func startWorkers(c *realcluster.Cluster, p plan, lane string, k int, synGroup bool) ([]*workerProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var ws []*workerProc
	for i := 0; i*p.perProc < k; i++ {
		n := min(p.perProc, k-i*p.perProc)
		hosts := fleetHosts(c.Hosts(), p.nodes)
		var cmd *exec.Cmd
		if lane == javaLane {
			if p.java == nil {
				stopWorkers(ws)
				return nil, errors.New("the java lane was not prepared (prepareJava)")
			}
			cmd = p.java.workerCmd(hosts, c.Port(), n, p.waitEvery, p.serveEvery)
		} else {
			cmd = exec.Command(self, "-worker", "-lane", lane, "-host", strings.Join(hosts, ","), "-port", strconv.Itoa(c.Port()),
				"-n", strconv.Itoa(n), "-wait-every", p.waitEvery.String(), "-serve-every", p.serveEvery.String())
		}
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", workerEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if synGroup {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(os.Getuid()), Gid: fleetGID}
		}
		logf, err := os.CreateTemp("", fmt.Sprintf("cqlcontrol-fleet-%s-%d-*.log", lane, i))
		if err != nil {
			stopWorkers(ws)
			return nil, err
		}
		cmd.Stderr = logf
		stdout, _ := cmd.StdoutPipe()
		stdin, _ := cmd.StdinPipe()
		if err := cmd.Start(); err != nil {
			_ = logf.Close()
			stopWorkers(ws)
			return nil, err
		}
		w := &workerProc{cmd: cmd, stdin: bufio.NewWriter(stdin), in: stdin, lines: make(chan workerLine, 1024), log: logf, n: n}
		go func() {
			defer close(w.lines)
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				var l workerLine
				if json.Unmarshal(sc.Bytes(), &l) == nil {
					w.lines <- l
				}
			}
		}()
		ws = append(ws, w)
	}
	return ws, nil
}

// killWorkers ends the workers' process groups at once and removes their logs (an interrupt).
func killWorkers(ws []*workerProc) {
	for _, w := range ws {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		_ = os.Remove(w.log.Name())
	}
}

func stopWorkers(ws []*workerProc) {
	for _, w := range ws {
		w.send("quit")
		_ = w.in.Close()
	}
	for _, w := range ws {
		done := make(chan struct{})
		go func() { _ = w.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL) // anything of its group left
		for range w.lines {
		}
		name := w.log.Name()
		_ = w.log.Close()
		_ = os.Remove(name)
	}
}

// await reads each worker's lines until want arrives from every one (or a worker ends, or
// the deadline), calling f on each line.
func await(ws []*workerProc, want string, deadline time.Time, f func(i int, l workerLine)) error {
	got := make([]bool, len(ws))
	left := len(ws)
	for left > 0 {
		for i, w := range ws {
			for {
				var l workerLine
				var ok bool
				select {
				case l, ok = <-w.lines:
				default:
					goto next
				}
				if !ok {
					return fmt.Errorf("worker %d ended (its log: %s)", i, w.log.Name())
				}
				if f != nil {
					f(i, l)
				}
				if l.Ev == want && !got[i] {
					got[i] = true
					left--
				}
			}
		next:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workers did not say %q in time", left, len(ws), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// runLane starts the fleet of one lane and takes it through each fault.
func runLane(c *realcluster.Cluster, syn *syncount.Counter, p plan, lane string, k, cost int, floor float64) ([]Row, error) {
	fmt.Fprintf(os.Stderr, "lane %s K=%d: starting the fleet\n", lane, k)
	ws, err := startWorkers(c, p, lane, k, syn != nil)
	if err != nil {
		return nil, err
	}
	defer stopWorkers(ws)
	defer atInterrupt(func() { killWorkers(ws) })()
	// The start is one herd too: allow twice the fleet's logins at the floor's rate on top
	// (K = 1,000 at cost 12 took about 15 minutes for gocql alone).
	start := 15 * time.Minute
	if floor > 0 {
		start += time.Duration(2 * float64(k*laneConns(lane)) / floor * float64(time.Second))
	}
	if err := await(ws, "up", time.Now().Add(start), nil); err != nil {
		return nil, err
	}
	var rows []Row
	for _, fault := range p.faults {
		time.Sleep(p.settle)
		// A fault begins when the whole fleet serves again (its latest query succeeded), or
		// capAfter from now with the clients still out recorded: the previous fault's count
		// ends at the cap, and its unserved clients would otherwise begin this one down.
		start := time.Now()
		live, err := awaitLive(ws, time.Now().Add(p.capAfter), time.Second)
		if err != nil {
			return rows, err
		}
		if live < k || time.Since(start) > 2*time.Second {
			fmt.Fprintf(os.Stderr, "lane %s K=%d: %d of %d clients serve before %s (waited %.1f s)\n", lane, k, live, k, fault, time.Since(start).Seconds())
		}
		r, err := runFault(c, syn, p, ws, lane, fault, k, cost, floor)
		if err != nil {
			return rows, err
		}
		r.NotServingAtFault = k - live
		rows = append(rows, r)
	}
	return rows, nil
}

// awaitLive asks the workers how many of their clients serve (their latest query succeeded)
// every poll until all of them do or deadline passes, and returns the last count.
func awaitLive(ws []*workerProc, deadline time.Time, poll time.Duration) (int, error) {
	for {
		for _, w := range ws {
			w.send("live")
		}
		live := make([]int, len(ws))
		if err := await(ws, "live", time.Now().Add(30*time.Second), func(i int, l workerLine) {
			if l.Ev == "live" {
				live[i] = l.Serving
			}
		}); err != nil {
			return 0, err
		}
		total, all := 0, true
		for i, w := range ws {
			total += live[i]
			all = all && live[i] >= w.n
		}
		if all || !time.Now().Add(poll).Before(deadline) {
			return total, nil
		}
		time.Sleep(poll)
	}
}

// runFault takes the fleet through one fault: the canary's steady window, the fault on
// faultedNodes (at once), their return, the count after tail, and the workers' reports.
func runFault(c *realcluster.Cluster, syn *syncount.Counter, p plan, ws []*workerProc, lane, fault string, k, cost int, floor float64) (Row, error) {
	ctx := context.Background()
	r := Row{Lane: lane, Fault: fault, K: k, Cost: cost, Processes: len(ws),
		FloorServing: round2(float64(k) / floor), FloorConnected: round2(float64(k*laneConns(lane)) / floor)}
	if err := validFault(fault, p.nodes); err != nil {
		return r, err
	}
	if p.nodes > 1 {
		r.Nodes = p.nodes
	}
	faulted := faultedNodes(p.nodes)
	var all, kept []int // every node; those whose JVM survives the fault
	for i := range p.nodes {
		all = append(all, i)
		if !restartsJVM(fault) || !slices.Contains(faulted, i) {
			kept = append(kept, i)
		}
	}

	cn, err := startCanary(canaryConfig(c.Hosts(), c.Port(), user, password), p.canaryEvery)
	if err != nil {
		return r, err
	}
	defer cn.close() // on an error return; the count closes it first otherwise
	if err := cn.awaitServing(canaryConnectWithin); err != nil {
		return r, err
	}
	// The canary's pool fills just after its first query (gocql dials NumConns - 1 more): let
	// it, so that its only logins after counted are its returns, which the count leaves out.
	time.Sleep(time.Second)
	counted := time.Now()
	// The login counters before the fault, of the nodes whose JVM it keeps: a killed node comes
	// back as a new JVM, its counters from zero (with one node killed, nothing is read).
	before, err := nodeLogins(ctx, c, kept)
	if err != nil {
		return r, err
	}
	// The steady window comes after the count's nodetool JVMs, which load the machine.
	time.Sleep(p.canarySteady)
	faultAt := time.Now()
	var ready, down time.Time
	var syns *synSampler
	defer func() {
		if syns != nil {
			syns.end() // on an error return; a no-op after the count's
		}
	}()
	tellDown := func() {
		syns = startSYNSampler(syn)
		down = time.Now()
		for _, w := range ws {
			w.send("down")
		}
	}
	switch fault {
	case "kill", "stop":
		// kill: SIGKILL. stop: a graceful stop, SIGTERM: Cassandra drains (the native
		// transport closes, the peers are told) and exits. Either way the fault is from the
		// JVMs' exit, and they are started again at once.
		stop := c.Kill
		if fault == "stop" {
			stop = c.Stop
		}
		if err := onNodes(faulted, stop); err != nil {
			return r, err
		}
		tellDown()
		if err := onNodes(faulted, func(i int) error { return c.Start(ctx, i) }); err != nil {
			return r, err
		}
		for _, i := range faulted {
			ready = latest(ready, c.ReadyAt(i))
		}
	case "rolling":
		// An operator's rolling restart of the fleet's nodes: each stopped gracefully,
		// started, and rollSettle after it answers CQL the next one. The fleet keeps a node
		// all along, so its clients mostly serve throughout: the query failures and the
		// longest gaps say what the restart cost them, and "ready" is the last node answering.
		for j, i := range faulted {
			if err := c.Stop(i); err != nil {
				return r, err
			}
			if j == 0 {
				tellDown()
			}
			if err := c.Start(ctx, i); err != nil {
				return r, err
			}
			ready = c.ReadyAt(i)
			if j < len(faulted)-1 {
				time.Sleep(p.rollSettle)
			}
		}
	case "disablebinary":
		if err := onNodes(faulted, func(i int) error { return c.DisableBinary(ctx, i) }); err != nil {
			return r, err
		}
		tellDown()
		time.Sleep(p.binaryOff)
		answered := make([]time.Time, p.nodes)
		if err := onNodes(faulted, func(i int) error {
			var err error
			answered[i], err = c.EnableBinary(ctx, i)
			return err
		}); err != nil {
			return r, err
		}
		ready = latest(answered...)
	}
	// ready, "the node answering CQL", is the last faulted node answering again: until then
	// the fleet has not got its whole cluster back.
	r.ReadyAfterFaultS = round2(ready.Sub(down).Seconds())
	cpu0, jit0 := serverCPU(c), serverJITCPU(c)
	for _, w := range ws {
		w.send("ready")
	}
	serving := make([]int, len(ws))
	deadline := ready.Add(p.capAfter)
	for time.Now().Before(deadline) {
		_ = await(ws, "serving", time.Now().Add(2*time.Second), func(i int, l workerLine) {
			if l.Ev == "serving" {
				serving[i] = l.Serving
			}
		})
		total := 0
		for _, s := range serving {
			total += s
		}
		if total >= k {
			break
		}
	}
	// The clients' other connections (gocql's pool, cqlcontrol's own) may come after their
	// first query: count their setups, and the server's logins, once they have had tail.
	time.Sleep(p.tail)
	// The canary ends at the count: its logins from counted on are known before they are
	// taken out of the nodes' counts.
	countAt := time.Now()
	samples := cn.close()
	syns.end()
	r.SYNs = syns.counts(ready)
	canaryLogins := cn.loginsSince(counted)
	// The setups kept before the read: every one's login is in it (a setup ends after its
	// AUTH_SUCCESS). The commands go out in order, so "mark" comes before "report".
	for _, w := range ws {
		w.send("mark")
	}
	after, err := nodeLogins(ctx, c, all)
	if err != nil {
		return r, err
	}
	r.Window = round2(time.Since(ready).Seconds())
	r.ServerCPU = round2((serverCPU(c) - cpu0).Seconds())
	r.ServerJITCPU = round2((serverJITCPU(c) - jit0).Seconds())
	for _, w := range ws {
		w.send("report")
	}
	var firsts, gaps []float64
	var fleetCPU time.Duration
	if err := await(ws, "report", time.Now().Add(30*time.Second), func(_ int, l workerLine) {
		if l.Ev != "report" || l.Report == nil {
			return
		}
		for _, ns := range l.Report.FirstOK {
			firsts = append(firsts, sinceReady(ns, ready))
		}
		for i, u := range l.Report.Unserved {
			if i < unservedTraces {
				fmt.Fprintf(os.Stderr, "fleet: a client left unserved (times after the fault): %s\n", u)
			}
		}
		r.Setups.add(l.Report.Setups)
		fleetCPU += l.Report.CPU
		r.QueryFailures += l.Report.QueryFailures
		for _, g := range l.Report.MaxGap {
			gaps = append(gaps, g.Seconds())
		}
	}); err != nil {
		return r, err
	}
	r.FleetCPU = round2(fleetCPU.Seconds())
	// The canary's own logins (its returns) are not the fleet's.
	r.AuthTasks = after.AuthTasks - before.AuthTasks - canaryLogins
	r.AuthSuccess, r.AuthFailure = after.Success-before.Success-canaryLogins, after.Failure-before.Failure
	r.ServerLogins = r.AuthSuccess + r.AuthFailure
	if after.Success < 0 || after.Failure < 0 || before.Success < 0 || before.Failure < 0 {
		r.ServerLogins = r.AuthTasks // ClientMetrics unreadable: the executor's count
	}
	r.Wasted = r.ServerLogins - r.Setups.OKAtRead
	slices.SortFunc(firsts, func(a, b float64) int {
		switch {
		case a == b:
			return 0
		case a < 0:
			return 1
		case b < 0:
			return -1
		case a < b:
			return -1
		}
		return 1
	})
	for _, f := range firsts {
		if f < 0 {
			r.Unserved++
		}
	}
	r.FirstOK = firsts
	r.T50, r.T95, r.T100 = quantile(firsts, 0.5), quantile(firsts, 0.95), quantile(firsts, 1)
	slices.Sort(gaps)
	r.GapP50S, r.GapP95S, r.GapMaxS = quantile(gaps, 0.5), quantile(gaps, 0.95), quantile(gaps, 1)
	r.returnRate()
	if hasOurs(lane) {
		if err := r.awaitOurs(ws, ready, ready.Add(p.oursCap)); err != nil {
			return r, err
		}
	}
	from, to := canaryReturnWindow(fault, down, ready, countAt, r.T100, r.Unserved, p.capAfter)
	r.setCanary(canaryWindow(samples, faultAt.Add(-p.canarySteady), faultAt), canaryWindow(samples, from, to))
	return r, nil
}

// sinceReady is a worker's time ns (Unix nanoseconds) in seconds after ready, at least 0;
// -1 when ns is 0 (none yet).
func sinceReady(ns int64, ready time.Time) float64 {
	if ns == 0 {
		return -1
	}
	return math.Max(0, time.Unix(0, ns).Sub(ready).Seconds())
}

// hasOurs reports whether lane's clients have cqlcontrol's own control connection.
func hasOurs(lane string) bool { return strings.HasPrefix(lane, "cqlcontrol") }

// awaitOurs asks the workers every second, until deadline, when each client's own control
// connection first set up since the fault, until every one has, and sets r's Ours figures
// (seconds after ready).
func (r *Row) awaitOurs(ws []*workerProc, ready, deadline time.Time) error {
	var back []float64
	var late []string
	for {
		back, late = back[:0], late[:0]
		for _, w := range ws {
			w.send("ours")
		}
		if err := await(ws, "ours", time.Now().Add(30*time.Second), func(_ int, l workerLine) {
			if l.Ev != "ours" || l.Report == nil {
				return
			}
			for _, ns := range l.Report.OursOK {
				back = append(back, sinceReady(ns, ready))
			}
			late = append(late, l.Report.OursLate[:min(len(l.Report.OursLate), unservedTraces)]...)
		}); err != nil {
			return err
		}
		if !slices.Contains(back, -1) || !time.Now().Add(time.Second).Before(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, tr := range late {
		fmt.Fprintf(os.Stderr, "fleet: a client whose own control connection is not back (times after the fault): %s\n", tr)
	}
	r.OursWindow = round2(time.Since(ready).Seconds())
	r.OursNotBack = 0
	var got []float64
	for _, b := range back {
		if b < 0 {
			r.OursNotBack++
		} else {
			got = append(got, b)
		}
	}
	slices.Sort(got)
	all := append(got, slices.Repeat([]float64{math.Inf(1)}, r.OursNotBack)...)
	q := func(p float64) float64 {
		v := quantile(all, p)
		if math.IsInf(v, 1) {
			return -1
		}
		return v
	}
	r.OursT50, r.OursT95, r.OursT100 = q(0.5), q(0.95), q(1)
	return nil
}

// onNodes runs f on each of the nodes idx at once: a fault hits them together.
func onNodes(idx []int, f func(i int) error) error {
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for j, i := range idx {
		wg.Go(func() { errs[j] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// latest is the latest of ts (zero for none).
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// nodeLogins is the login counters of the nodes idx, summed (zero for none), read one node
// after the other: each read is three nodetool JVMs.
func nodeLogins(ctx context.Context, c *realcluster.Cluster, idx []int) (realcluster.Logins, error) {
	var sum realcluster.Logins
	for _, i := range idx {
		l, err := c.Logins(ctx, i)
		if err != nil {
			return sum, fmt.Errorf("login counters of node%d: %w", i+1, err)
		}
		sum = addLogins(sum, l)
	}
	return sum, nil
}

// addLogins sums two nodes' counters; ClientMetrics' counts stay -1 (unread) when either is.
func addLogins(a, b realcluster.Logins) realcluster.Logins {
	known := func(x, y int64) int64 {
		if x < 0 || y < 0 {
			return -1
		}
		return x + y
	}
	return realcluster.Logins{AuthTasks: a.AuthTasks + b.AuthTasks, Success: known(a.Success, b.Success), Failure: known(a.Failure, b.Failure)}
}

// serverCPU is the CPU time of every node's current JVM, summed.
func serverCPU(c *realcluster.Cluster) time.Duration { return sumNodes(c, (*realcluster.Node).CPU) }

// serverJITCPU is the CPU time of every node's current JVM's JIT compiler threads, summed.
func serverJITCPU(c *realcluster.Cluster) time.Duration {
	return sumNodes(c, (*realcluster.Node).JITCPU)
}

// sumNodes sums f over the cluster's nodes.
func sumNodes(c *realcluster.Cluster, f func(*realcluster.Node) time.Duration) time.Duration {
	var sum time.Duration
	for _, n := range c.Nodes() {
		sum += f(n)
	}
	return sum
}

// quantile of sorted values (-1s, the unserved, last): -1 when it falls among the unserved.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return round2(sorted[i])
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// measurementKey is what makes a row the same measurement as another: lane, fault, K, cost
// and, with more than one node, the node count (a 1-node row keeps the key it had before).
func measurementKey(r Row) string {
	key := fmt.Sprintf("%s/%s/%d/%d", r.Lane, r.Fault, r.K, r.Cost)
	if r.nodes() > 1 {
		key += fmt.Sprintf("/%dnodes", r.nodes())
	}
	return key
}

// keepOld returns fresh with old's entries for the keys fresh lacks: the costs a run did not
// measure anew keep what the file had.
func keepOld[V any](fresh, old map[string]V) map[string]V {
	if fresh == nil {
		fresh = map[string]V{}
	}
	for k, v := range old {
		if _, ok := fresh[k]; !ok {
			fresh[k] = v
		}
	}
	return fresh
}

// merge writes res into path, replacing the rows (and floors) it has anew.
func merge(path string, res *Results) error {
	var old Results
	if raw, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(raw, &old)
	}
	fresh := map[string]bool{}
	for _, r := range res.Rows {
		fresh[measurementKey(r)] = true
	}
	var rows []Row
	for _, r := range old.Rows {
		if !fresh[measurementKey(r)] {
			rows = append(rows, r)
		}
	}
	res.Rows = append(rows, res.Rows...)
	res.Floors = keepOld(res.Floors, old.Floors)
	res.ReturnFloors = keepOld(res.ReturnFloors, old.ReturnFloors)
	res.LoginLoads = keepOld(res.LoginLoads, old.LoginLoads)
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
