module github.com/cqlcontrol/cqlcontrol/bench/fleet

go 1.26.0

require (
	github.com/apache/cassandra-gocql-driver/v2 v2.1.2
	github.com/cqlcontrol/cqlcontrol v0.1.0
	github.com/cqlcontrol/cqlcontrol/gocqlv2 v0.1.0
	github.com/datastax/go-cassandra-native-protocol v0.0.0-20240626123646-2abea740da8d
	github.com/gocql/gocql v1.7.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/crypto v0.58.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/golang/snappy v0.0.4 // indirect
	github.com/hailocab/go-hostpool v0.0.0-20160125115350-e80d13ce29ed // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
)

// This checkout's cqlcontrol and realcluster, not a published one.
replace (
	github.com/cqlcontrol/cqlcontrol => ../..
	github.com/cqlcontrol/cqlcontrol/gocqlv2 => ../../gocqlv2
)
