#include "tests/support/etcd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace shard::testing {
namespace {

// A loopback port free right now (the kernel's choice for port 0).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path == nullptr ? "" : path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Whether etcd answers a read (it has a leader) within `wait`.
bool Answers(const std::string& endpoint, const EtcdProcess::Tls* tls,
             absl::Duration wait) {
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (tls != nullptr) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(tls->ca_file);
    ssl.pem_cert_chain = ReadFile(tls->client_cert_file);
    ssl.pem_private_key = ReadFile(tls->client_key_file);
    credentials = grpc::SslCredentials(ssl);
  }
  auto stub =
      etcdserverpb::KV::NewStub(grpc::CreateChannel(endpoint, credentials));
  const absl::Time until = absl::Now() + wait;
  while (absl::Now() < until) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    context.set_wait_for_ready(true);
    etcdserverpb::RangeRequest request;
    request.set_key("probe");
    etcdserverpb::RangeResponse response;
    if (stub->Range(&context, request, &response).ok()) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(
    const Tls* tls) {
  if (!OnPath("etcd")) {
    return absl::FailedPreconditionError(
        "no etcd binary on PATH (Debian: apt install etcd-server)");
  }
  std::unique_ptr<EtcdProcess> etcd(new EtcdProcess());
  char pattern[] = "/tmp/shard-etcd-XXXXXX";
  etcd->dir_ = mkdtemp(pattern);
  const int client_port = FreePort();
  const int peer_port = FreePort();
  etcd->endpoint_ = absl::StrCat("127.0.0.1:", client_port);
  const std::string client_url =
      absl::StrCat(tls != nullptr ? "https://" : "http://", etcd->endpoint_);
  const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port);
  const std::string log = etcd->dir_ + "/etcd.log";
  std::vector<std::string> args = {"etcd",
                                   "--name=test",
                                   "--data-dir=" + etcd->dir_ + "/data",
                                   "--listen-client-urls=" + client_url,
                                   "--advertise-client-urls=" + client_url,
                                   "--listen-peer-urls=" + peer_url,
                                   "--initial-advertise-peer-urls=" + peer_url,
                                   "--initial-cluster=test=" + peer_url};
  if (tls != nullptr) {
    args.insert(args.end(),
                {"--cert-file=" + tls->cert_file, "--key-file=" + tls->key_file,
                 "--trusted-ca-file=" + tls->ca_file, "--client-cert-auth"});
  }
  etcd->pid_ = fork();
  if (etcd->pid_ == 0) {
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execvp("etcd", argv.data());
    _exit(127);
  }
  if (!Answers(etcd->endpoint_, tls, absl::Seconds(30))) {
    return absl::UnavailableError(absl::StrCat(
        "etcd did not come up on ", etcd->endpoint_, ":\n", ReadFile(log)));
  }
  return etcd;
}

void EtcdProcess::Pause() { kill(pid_, SIGSTOP); }

void EtcdProcess::Resume() { kill(pid_, SIGCONT); }

EtcdProcess::~EtcdProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace shard::testing
