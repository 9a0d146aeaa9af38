#!/usr/bin/env bash
# The Spark image of the process node: what a Spark container runs when its
# pod starts, without an image. The node agent's image table maps the Spark
# image name to this script, with the environment an image would carry
# (PATH, JAVA_HOME) and SPARK_CLASSPATH_FILE: a file holding the classpath of
# Spark's jars (resolved from Maven by scripts/lib.sh, node_images).
#
# Spark's pod spec passes one of these as the container's arguments; the rest
# of the contract is the environment Spark sets on the pod:
#   executor  KubernetesExecutorBackend with SPARK_DRIVER_URL, SPARK_EXECUTOR_ID,
#             SPARK_EXECUTOR_CORES, SPARK_APPLICATION_ID, SPARK_EXECUTOR_POD_IP
#             (the pod IP, from the downward API), SPARK_RESOURCE_PROFILE_ID,
#             SPARK_EXECUTOR_POD_NAME, SPARK_EXECUTOR_MEMORY, and the JVM
#             options as SPARK_JAVA_OPT_0..N, in that order
#   driver    spark-submit in client mode inside the pod (cluster mode), bound
#             to SPARK_DRIVER_BIND_ADDRESS (the pod IP), with the arguments Spark
#             gives it: --properties-file <conf dir>/spark.properties --class
#             <main> <primary resource> <app args>. What Spark's bin/spark-submit
#             (its launcher) reads from that file before the JVM starts is
#             applied here: spark.driver.memory (-Xmx, 1g by default),
#             spark.driver.{default,extra}JavaOptions (split at whitespace, no
#             quoting), spark.driver.{extra,defaultExtra}ClassPath (ahead of
#             Spark's jars) and spark.driver.extraLibraryPath (LD_LIBRARY_PATH),
#             plus the launcher's own JVM options for Java 17 (JavaModuleOptions)
# Java is exec'd, so that the pod's process is the JVM and its exit code and
# signals are the container's own.
set -euo pipefail

: "${SPARK_CLASSPATH_FILE:?the image table must set SPARK_CLASSPATH_FILE}"
classpath=$(<"$SPARK_CLASSPATH_FILE")
# The conf directory Spark mounts from its ConfigMap (log4j2.properties, ...).
if [[ -n "${SPARK_CONF_DIR:-}" ]]; then classpath="$SPARK_CONF_DIR:$classpath"; fi
if [[ -n "${SPARK_EXTRA_CLASSPATH:-}" ]]; then classpath="$classpath:$SPARK_EXTRA_CLASSPATH"; fi
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

# SPARK_JAVA_OPT_<n>, ordered by n (not by name: 10 comes after 9).
java_opts=()
while IFS= read -r name; do
  java_opts+=("${!name}")
done < <(compgen -e | grep '^SPARK_JAVA_OPT_[0-9]*$' | sort -t_ -k4 -n)

# The value of key $2 in the Java properties file $1 (as Spark writes its
# spark.properties: Properties.store, one key=value a line), empty if absent.
# Unescapes \X to X (Spark's values escape ':', '=', '#', '!'); \t, \n and
# \uXXXX, which Spark's keys and paths do not use, are not decoded.
driver_property() {
  local file=$1 key=$2 line
  [[ -n "$file" && -r "$file" ]] || return 0
  while IFS= read -r line || [[ -n "$line" ]]; do
    if [[ "$line" == "$key="* ]]; then
      sed 's/\\\(.\)/\1/g' <<<"${line#"$key="}"
      return 0
    fi
  done <"$file"
}

role=${1:-}
shift || true
case "$role" in
  executor)
    for var in SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_APPLICATION_ID \
        SPARK_EXECUTOR_POD_IP SPARK_RESOURCE_PROFILE_ID SPARK_EXECUTOR_POD_NAME SPARK_EXECUTOR_MEMORY; do
      if [[ -z "${!var:-}" ]]; then
        echo "spark-entrypoint: $var is not set; is this an executor pod made by Spark?" >&2
        exit 1
      fi
    done
    exec "$java" "${java_opts[@]}" -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" \
      -cp "$classpath" org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
      --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  driver)
    : "${SPARK_DRIVER_BIND_ADDRESS:?Spark sets SPARK_DRIVER_BIND_ADDRESS on the driver pod}"
    properties_file=""
    for ((i = 1; i < $#; i++)); do
      if [[ "${!i}" == --properties-file ]]; then
        next=$((i + 1))
        properties_file=${!next}
      fi
    done
    memory=$(driver_property "$properties_file" spark.driver.memory)
    extra_classpath=$(driver_property "$properties_file" spark.driver.extraClassPath)
    default_classpath=$(driver_property "$properties_file" spark.driver.defaultExtraClassPath)
    library_path=$(driver_property "$properties_file" spark.driver.extraLibraryPath)
    read -ra default_options <<<"$(driver_property "$properties_file" spark.driver.defaultJavaOptions)"
    read -ra extra_options <<<"$(driver_property "$properties_file" spark.driver.extraJavaOptions)"
    # The launcher puts the extra classpath ahead of the conf dir and Spark's jars.
    for entry in "$default_classpath" "$extra_classpath"; do
      if [[ -n "$entry" ]]; then classpath="$entry:$classpath"; fi
    done
    if [[ -n "$library_path" ]]; then
      export LD_LIBRARY_PATH="$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    # What Spark's launcher adds to every driver JVM on Java 17+ (JavaModuleOptions):
    # the project's one list, java/jvm.options, a java @argument file.
    module_options=("@${SPARK_JVM_OPTIONS_FILE:?the image table sets it to java/jvm.options}")
    exec "$java" -Xmx"${memory:-${SPARK_DRIVER_MEMORY:-1g}}" "${module_options[@]}" \
      "${default_options[@]}" "${extra_options[@]}" "${java_opts[@]}" \
      -cp "$classpath" org.apache.spark.deploy.SparkSubmit \
      --deploy-mode client --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" "$@"
    ;;
  *)
    echo "spark-entrypoint: unknown role '$role' (expected executor or driver); arguments: $*" >&2
    exit 2
    ;;
esac
