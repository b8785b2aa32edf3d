module github.com/cqlcontrol/cqlcontrol/gocqlv2

go 1.26.0

require (
	github.com/apache/cassandra-gocql-driver/v2 v2.1.2
	github.com/cqlcontrol/cqlcontrol v0.1.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/datastax/go-cassandra-native-protocol v0.0.0-20240626123646-2abea740da8d // indirect
	github.com/gocql/gocql v1.7.0 // indirect
	github.com/golang/snappy v0.0.4 // indirect
	github.com/hailocab/go-hostpool v0.0.0-20160125115350-e80d13ce29ed // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
)

// Development in this repository builds against the checkout's main module. Go ignores a
// dependency's replace directives, so a user of this module gets the version required above
// (make consumer proves it: a module outside the tree builds against the two modules as
// published, replace ignored).
replace github.com/cqlcontrol/cqlcontrol => ../
