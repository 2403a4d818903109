#!/usr/bin/env bash
# Makes the Secrets that deploy/components/secure mounts: a private CA, a server certificate per
# component, a random scrape password with its bcrypt hash, the web config, and the Secret that
# gives Prometheus the CA and the credentials. Writes OUT_DIR/secrets.yaml (apply it with
# `kubectl apply -f`) and keeps the CA key there for the next renewal; nothing is sent to a
# cluster.
#
#   deploy/components/secure/make-secrets.sh OUT_DIR
#
# Needs openssl, kubectl (only to write the Secret manifests, offline) and, for the bcrypt hash,
# htpasswd (apache2-utils) or a python3 with the bcrypt package (PYTHON=... picks another one).
# Environment: NAMESPACE (gpu-reclaim), SCRAPE_USER (prometheus), DAYS (server certificates,
# 397), BCRYPT_COST (12).
# Renewal: run it again with the same OUT_DIR; it reuses the CA (so Prometheus keeps trusting the
# servers) and issues new certificates and a new password. The servers pick up the new files
# without a restart; Prometheus reads the new password when the operator refreshes it.
set -euo pipefail

out=${1:?usage: make-secrets.sh OUT_DIR}
ns=${NAMESPACE:-gpu-reclaim}
user=${SCRAPE_USER:-prometheus}
days=${DAYS:-397}
cost=${BCRYPT_COST:-12}
python=${PYTHON:-python3}
if [[ $python == */* ]]; then python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"; fi

umask 077
mkdir -p "$out"
cd "$out"

ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

if [[ ! -s ca.key || ! -s ca.crt ]]; then
  ec_key ca.key
  openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=gpu-reclaim scrape CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt
fi

for component in gpu-exporter gpu-reclaimer; do
  name="$component.$ns.svc"
  ec_key "$component.key"
  openssl req -new -key "$component.key" -subj "/CN=$name" -out "$component.csr"
  printf '%s\n' \
    "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=DNS:$name,DNS:$name.cluster.local" > "$component.ext"
  openssl x509 -req -in "$component.csr" -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
    -sha256 -days "$days" -extfile "$component.ext" -out "$component.crt" 2>/dev/null
  rm -f "$component.csr" "$component.ext"
done

openssl rand -hex 24 | tr -d '\n' > password
if command -v htpasswd >/dev/null 2>&1; then
  hash=$(htpasswd -nbBC "$cost" "" "$(cat password)" | tr -d ':\n')
else
  hash=$("$python" -c 'import sys, bcrypt
print(bcrypt.hashpw(open("password", "rb").read(), bcrypt.gensalt(int(sys.argv[1]))).decode())' "$cost")
fi

# The web config both servers read (exporter-toolkit's format; docs/security-webconfig.md).
cat > web.yml <<EOF
tls_server_config:
  cert_file: /etc/gpu-reclaim/tls/tls.crt
  key_file: /etc/gpu-reclaim/tls/tls.key
  min_version: TLS12
basic_auth_users:
  $user: '$hash'
EOF

secret() { kubectl create secret "$@" --namespace "$ns" --dry-run=client -o yaml; }
{
  secret generic gpu-reclaim-web-config --from-file=web.yml=web.yml
  echo ---
  secret tls gpu-exporter-tls --cert=gpu-exporter.crt --key=gpu-exporter.key
  echo ---
  secret tls gpu-reclaimer-tls --cert=gpu-reclaimer.crt --key=gpu-reclaimer.key
  echo ---
  secret generic gpu-reclaim-scrape-auth --from-literal=username="$user" \
    --from-file=password=password --from-file=ca.crt=ca.crt
} > secrets.yaml

cat <<EOF
Wrote $out/secrets.yaml (4 Secrets in namespace $ns). Next:
  kubectl apply -f $out/secrets.yaml
  kubectl apply -k deploy/overlays/secure-dry-run   # or secure-enforce
$out/ca.key signs the server certificates: keep it offline (or delete it and let the next run
make a new CA). $out/password and secrets.yaml hold the scrape password: delete them once applied.
EOF
