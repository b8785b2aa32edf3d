# The cqlcontrol simulator as an image: one node of a static cluster per container.
#
# The image holds nothing but the static binary, built on the host first, so that no base image has
# to be pulled. `make image` does both steps:
#
#   CGO_ENABLED=0 go build -o bin/image/cqlcontrol ./cmd/cqlcontrol
#   docker build -t cqlcontrol-sim:latest -f Dockerfile bin/image
#
# The node binds 0.0.0.0 and advertises its container address; give every node the members'
# addresses (fixed addresses on a user-defined network, see docker-compose.yml):
#
#   docker run --network cql --ip 172.28.42.11 cqlcontrol-sim:latest --peers 172.28.42.11,172.28.42.12,172.28.42.13
#
# On the host's network instead (as the container test suite runs it), each node binds a loopback
# address of its own; a flag given again overrides the entrypoint's:
#
#   docker run --network host cqlcontrol-sim:latest --listen 127.0.0.2 --control 127.0.0.2:7070 --peers 127.0.0.2,127.0.0.3,127.0.0.4
#
# CQL on 9042, the HTTP JSON control API on 7070 (GET /nodes, GET /peers, POST /nodes/0/stop, ...).
# Any other `cqlcontrol sim` flag can follow (--gossip-delay, --release-version, ...). There is no
# EXPOSE: a port is published only where asked for (docker-compose.yml's ports), and on the host's
# network, where nothing is published, testcontainers would otherwise ask for the image's ports.
FROM scratch
COPY cqlcontrol /cqlcontrol
ENTRYPOINT ["/cqlcontrol", "sim", "--listen", "0.0.0.0", "--port", "9042", "--control", "0.0.0.0:7070"]
