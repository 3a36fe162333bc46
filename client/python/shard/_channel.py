"""Channel, credentials and bearer token for the coordinator's address."""
import os
import stat

import grpc


def _read_secret(path, what):
    """The file's contents. A secret (the token, a private key) that others
    may read is refused; owner- and group-readable files are accepted
    (Kubernetes mounts Secrets group-readable for the pod's fsGroup). The
    mode is the one of the file behind symlinks, as in a Secret volume. The
    same rule as the C++ programs' (common/security/secret_files.h)."""
    if what in ("token", "key"):
        mode = os.stat(path).st_mode
        if mode & stat.S_IRWXO:
            raise ValueError(
                f"{path}: the {what} file is a secret but others may read "
                f"it (mode {stat.S_IMODE(mode):04o}); allow its owner and "
                "group only (chmod 600 or 640)")
    with open(path, "rb") as f:
        return f.read()


def open_channel(address, token_file=None, tls_ca=None, tls_cert=None,
                 tls_key=None):
    """A channel to `address` ("host:port"); TLS when any TLS file is given,
    mutual TLS with tls_cert + tls_key. Returns (channel, call metadata)."""
    metadata = ()
    if token_file:
        token = _read_secret(token_file, "token").decode().strip()
        metadata = (("authorization", f"Bearer {token}"),)
    options = [("grpc.max_receive_message_length", 16 << 20)]
    if tls_ca or tls_cert or tls_key:
        if bool(tls_cert) != bool(tls_key):
            raise ValueError("give both tls_cert and tls_key, or neither")
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read_secret(tls_ca, "ca") if tls_ca else None,
            private_key=_read_secret(tls_key, "key") if tls_key else None,
            certificate_chain=(_read_secret(tls_cert, "cert")
                               if tls_cert else None))
        return grpc.secure_channel(address, credentials, options), metadata
    return grpc.insecure_channel(address, options), metadata
