// Package plan orders the hosts of each connection attempt of the control connection: the
// evidenced host first, then hosts believed up, unknown and known down (each down host at most
// once per its own backoff in a re-armed attempt), blind attempts after the first of a
// recovery limited to BlindAttemptHosts of them in rotation; and it resolves the contact points
// again for every attempt. The record of our dials it orders by has one owner, controlconn's
// worker, which keeps each address's as a field of the host's record in its host table
// (Records), and plans each attempt from a copy (View). Package controlconn drives it; the lab
// models the same limit.
package plan
