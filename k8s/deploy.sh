#!/usr/bin/env bash
# Installs or upgrades Trainyard from a kustomize overlay, in the order that matters:
# infrastructure (namespace, config, volumes, NATS, PostgreSQL if in the overlay), then the
# migration Job (waited for), then the apps. Usage: k8s/deploy.sh k8s/overlays/production
set -euo pipefail
overlay="${1:?usage: k8s/deploy.sh <overlay directory>}"
ns="${NAMESPACE:-trainyard}"
rendered="$(mktemp)"
trap 'rm -f "$rendered"' EXIT
kubectl kustomize "$overlay" > "$rendered"

secrets=(trainyard-database)
grep -q 'name: trainyard-postgres$' "$rendered" && secrets+=(trainyard-postgres)
for secret in "${secrets[@]}"; do
  kubectl -n "$ns" get secret "$secret" >/dev/null 2>&1 || { echo "Secret $ns/$secret is missing: see docs/deploy.md" >&2; exit 1; }
done

echo "1/3 infrastructure"
kubectl apply -f "$rendered" -l trainyard.dev/stage=infra
kubectl -n "$ns" rollout status statefulset/nats --timeout=5m
if kubectl -n "$ns" get statefulset/postgres >/dev/null 2>&1; then
  kubectl -n "$ns" rollout status statefulset/postgres --timeout=5m
fi

echo "2/3 migrations"
kubectl -n "$ns" delete job trainyard-migrate --ignore-not-found --wait=true
kubectl apply -f "$rendered" -l trainyard.dev/stage=migrate
if ! kubectl -n "$ns" wait --for=condition=complete job/trainyard-migrate --timeout=15m; then
  kubectl -n "$ns" logs job/trainyard-migrate --tail=100 >&2 || true
  echo "Migrations failed: the apps were not rolled out." >&2
  exit 1
fi

echo "3/3 apps"
kubectl apply -f "$rendered"
for d in $(kubectl -n "$ns" get deployments -l app.kubernetes.io/part-of=trainyard -o name); do
  kubectl -n "$ns" rollout status "$d" --timeout=10m
done
echo "Trainyard is up: kubectl -n $ns get ingress gateway"
