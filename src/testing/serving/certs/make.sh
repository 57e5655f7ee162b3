#!/bin/sh
# How the committed test certificates were made (P-256 keys, valid 100 years).
set -e
gen_ca() {
  openssl ecparam -name prime256v1 -genkey -noout -out "$1-key.pem"
  openssl req -x509 -new -key "$1-key.pem" -sha256 -days 36500 -subj "/CN=$2" -out "$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}
gen_ca ca "kube-informer test CA"
gen_ca other-ca "kube-informer unrelated CA"
openssl ecparam -name prime256v1 -genkey -noout -out server-key-sec1.pem
openssl pkcs8 -topk8 -nocrypt -in server-key-sec1.pem -out server-key.pem && rm server-key-sec1.pem
openssl req -new -key server-key.pem -subj "/CN=kube-apiserver" -out server.csr
printf "subjectAltName=DNS:localhost,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n" > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 36500 -sha256 -extfile server.ext -out server.pem
printf "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n" > client.ext
openssl ecparam -name prime256v1 -genkey -noout -out admin-key.pem
openssl req -new -key admin-key.pem -subj "/O=system:masters/CN=kube-admin" -out admin.csr
openssl x509 -req -in admin.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 36500 -sha256 -extfile client.ext -out admin.pem
openssl ecparam -name prime256v1 -genkey -noout -out stranger-key.pem
openssl req -new -key stranger-key.pem -subj "/CN=stranger" -out stranger.csr
openssl x509 -req -in stranger.csr -CA other-ca.pem -CAkey other-ca-key.pem -CAcreateserial -days 36500 -sha256 -extfile client.ext -out stranger.pem
rm -f ./*.csr ./*.srl ./*.ext
