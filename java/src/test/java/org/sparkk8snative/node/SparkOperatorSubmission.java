package org.sparkk8snative.node;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * The spark-submit arguments the Kubeflow Spark Operator builds from a {@code SparkApplication}, as
 * its internal/controller/sparkapplication/submission.go does (buildSparkSubmitArgs, in its order),
 * for the fields a SparkApplication of this project's docs may use. A field outside those fails, so
 * that docs/examples/spark-application.yaml cannot say more than ClusterModeTest runs.
 */
final class SparkOperatorSubmission {
  private static final Set<String> SPEC_FIELDS =
      Set.of(
          "type",
          "mode",
          "sparkVersion",
          "image",
          "imagePullPolicy",
          "mainClass",
          "mainApplicationFile",
          "arguments",
          "deps",
          "sparkConf",
          "driver",
          "executor");
  private static final Set<String> DEPS_FIELDS = Set.of("jars", "packages", "repositories");
  private static final Set<String> POD_FIELDS =
      Set.of("cores", "coreRequest", "memory", "serviceAccount", "javaOptions", "instances");

  private SparkOperatorSubmission() {}

  static ObjectNode read(Path yaml) throws IOException {
    return (ObjectNode) new ObjectMapper(new YAMLFactory()).readTree(yaml.toFile());
  }

  /** The arguments for {@code spark-submit} (after the program), given the operator's master. */
  static List<String> sparkSubmitArgs(JsonNode app, String masterUrl) {
    JsonNode spec = app.path("spec");
    only(spec, SPEC_FIELDS, "spec");
    only(spec.path("deps"), DEPS_FIELDS, "spec.deps");
    only(spec.path("driver"), POD_FIELDS, "spec.driver");
    only(spec.path("executor"), POD_FIELDS, "spec.executor");
    String name = app.path("metadata").path("name").asText();
    List<String> args = new ArrayList<>();
    BiConsumer<String, String> conf =
        (key, value) -> args.addAll(List.of("--conf", key + "=" + value));

    args.addAll(List.of("--master", masterUrl, "--deploy-mode", spec.path("mode").asText()));
    if (spec.has("mainClass")) {
      args.addAll(List.of("--class", spec.path("mainClass").asText()));
    }
    args.addAll(List.of("--name", name));
    JsonNode deps = spec.path("deps");
    for (String field : List.of("jars", "packages", "repositories")) {
      if (deps.has(field)) {
        args.addAll(List.of("--" + field, String.join(",", strings(deps.path(field)))));
      }
    }
    conf.accept("spark.kubernetes.namespace", app.path("metadata").path("namespace").asText());
    if (spec.has("image")) {
      conf.accept("spark.kubernetes.container.image", spec.path("image").asText());
    }
    if (spec.has("imagePullPolicy")) {
      conf.accept(
          "spark.kubernetes.container.image.pullPolicy", spec.path("imagePullPolicy").asText());
    }
    conf.accept("spark.kubernetes.submission.waitAppCompletion", "false");
    for (Map.Entry<String, JsonNode> entry : spec.path("sparkConf").properties()) {
      if (!entry.getKey().equals("spark.kubernetes.driver.pod.name")) {
        conf.accept(entry.getKey(), entry.getValue().asText());
      }
    }
    conf.accept("spark.kubernetes.driver.pod.name", name + "-driver");
    conf.accept("spark.kubernetes.driver.label.sparkoperator.k8s.io/app-name", name);
    conf.accept(
        "spark.kubernetes.driver.label.sparkoperator.k8s.io/launched-by-spark-operator", "true");
    if (spec.has("image")) {
      conf.accept("spark.kubernetes.driver.container.image", spec.path("image").asText());
    }
    JsonNode driver = spec.path("driver");
    podConf(driver, "cores", "spark.driver.cores", conf);
    podConf(driver, "coreRequest", "spark.kubernetes.driver.request.cores", conf);
    podConf(driver, "memory", "spark.driver.memory", conf);
    podConf(
        driver, "serviceAccount", "spark.kubernetes.authenticate.driver.serviceAccountName", conf);
    podConf(driver, "javaOptions", "spark.driver.extraJavaOptions", conf);
    JsonNode executor = spec.path("executor");
    if (spec.has("image")) {
      conf.accept("spark.kubernetes.executor.container.image", spec.path("image").asText());
    }
    podConf(executor, "cores", "spark.executor.cores", conf);
    podConf(executor, "coreRequest", "spark.kubernetes.executor.request.cores", conf);
    podConf(executor, "memory", "spark.executor.memory", conf);
    podConf(
        executor,
        "serviceAccount",
        "spark.kubernetes.authenticate.executor.serviceAccountName",
        conf);
    podConf(executor, "javaOptions", "spark.executor.extraJavaOptions", conf);
    podConf(executor, "instances", "spark.executor.instances", conf);
    args.add(spec.path("mainApplicationFile").asText());
    args.addAll(strings(spec.path("arguments")));
    return args;
  }

  private static void podConf(
      JsonNode pod, String field, String key, BiConsumer<String, String> conf) {
    if (pod.has(field)) {
      conf.accept(key, pod.path(field).asText());
    }
  }

  private static List<String> strings(JsonNode array) {
    List<String> values = new ArrayList<>();
    array.forEach(value -> values.add(value.asText()));
    return values;
  }

  private static void only(JsonNode node, Set<String> known, String where) {
    node.fieldNames()
        .forEachRemaining(
            field -> {
              if (!known.contains(field)) {
                throw new IllegalArgumentException(
                    where + "." + field + " is not mapped here: add it as the operator maps it");
              }
            });
  }
}
