#!/usr/bin/env bash
# The preStop hook of Spark's executor pods when decommissioning is on
# (spark.kubernetes.decommission.script; Spark's image has /opt/decom.sh): the
# node agent runs it when the pod is deleted, before SIGTERM. As Spark's own
# script does, it asks the executor's JVM to decommission (SIGPWR: migrate its
# blocks, then exit) and waits for it to exit, within the grace period.
# Pods on the node share its PID namespace, so the agent names the JVM
# (LOCALNODE_CONTAINER_PID) instead of this script looking for "the" java.
set -uo pipefail
pid=${LOCALNODE_CONTAINER_PID:?the node agent sets LOCALNODE_CONTAINER_PID for hooks}
echo "decom.sh: asking executor process $pid to decommission (SIGPWR)"
kill -s PWR "$pid" || exit 0
while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
echo "decom.sh: executor process $pid exited"
