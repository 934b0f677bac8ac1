// The job-token probe (issue 7): one process of one job, run by
// job_token_test.sh as two independent `mpirun -np 1` jobs on one host at once.
//
//   job_token_probe A|B <dir> [refuse|same-token]
//
// Why two mpirun jobs and not two ranks of one: the token protects a job from
// processes of *another* job that got hold of one of its addresses. Two ranks
// of one MPI job share a token by construction; two separate jobs each draw
// their own, exactly as the library's bootstrap does (world_creation.cpp,
// share_job_token: process 0 draws 16 bytes with getrandom and the bootstrap
// shares them). Here rank 0 of each one-process job draws and MPI_Bcast shares
// (trivially, but over the same path a bigger job would use).
//
// The two jobs find each other only through files in <dir>, which MPI cannot
// reach across jobs: each writes its UCX worker address to <dir>/<role>.addr
// (tmp + rename, so a reader never sees half a file), waits for the other's,
// and connects to [A, B] (both agree: A is index 0, B index 1), then runs the
// connection handshake.
//
//   refuse      each job keeps its own token: the handshake must fail with
//               kProtocolError saying the hello comes from another job, is
//               refused, naming the peer's rank, and not naming this job's
//               token (a key: it never travels nor appears in a message).
//               Exit 0 only then.
//   same-token  the control: B takes A's token (A writes <dir>/A.token), so
//               both are "one job". The handshake must succeed and one small
//               exchange must deliver checked data, which shows that refusal
//               comes from the token and not from the set-up.
//
// Output: one line `RESULT role=A mode=refuse status=<ErrorCode name> msg="..."`
// (plus a TOKEN line) on stdout; the exit code says whether the expectation held.
// Every wait is bounded, so a lost peer job ends this one within ~25 s.
#include <mpi.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transport/transport.hpp"
#include "transport_test_util.hpp"

namespace ruccl::transport::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kFileWait = 15s;      // for the other job's address (or A's token)
constexpr auto kConnect = 5s;
constexpr auto kHandshake = 5s;
constexpr auto kDoneWait = 3s;       // both jobs close at about the same time
constexpr auto kClose = 2s;

// Writes `bytes` to `path` atomically: a reader sees nothing or all of it.
bool write_file(const std::string& path, const void* data, std::size_t bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// The contents of `path` once it exists, polling until `deadline`.
std::optional<std::vector<std::byte>> wait_for_file(const std::string& path,
                                                    Clock::time_point deadline) {
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::vector<std::byte> bytes(chars.size());
      if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
      return bytes;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

// Rank 0 draws the token from the OS random source; MPI_Bcast shares it.
Result<JobToken> draw_and_share_token() {
  JobToken token{};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  unsigned char drawn = 1;
  if (rank == 0) {
    std::size_t got = 0;
    while (got < token.size()) {
      const ssize_t n = ::getrandom(token.data() + got, token.size() - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    drawn = got == token.size() ? 1 : 0;
  }
  MPI_Bcast(&drawn, 1, MPI_UNSIGNED_CHAR, 0, MPI_COMM_WORLD);
  MPI_Bcast(token.data(), static_cast<int>(token.size()), MPI_UNSIGNED_CHAR, 0, MPI_COMM_WORLD);
  if (!drawn) return Status(ErrorCode::kInternal, "getrandom could not draw a job token");
  return token;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Probe {
  std::string role;  // "A" or "B"
  std::string other;
  std::string dir;
  bool same_token = false;

  std::string path(const std::string& name) const { return dir + "/" + name; }

  // The handshake's status (or the set-up's failure), and for the control the
  // exchange's; `token` is this job's token as used.
  Status run(JobToken& token) {
    if (same_token) {
      if (role == "A") {
        if (!write_file(path("A.token"), token.data(), token.size()))
          return Status(ErrorCode::kInternal, "cannot write " + path("A.token"));
      } else {
        auto shared = wait_for_file(path("A.token"), Clock::now() + kFileWait);
        if (!shared || shared->size() != token.size())
          return Status(ErrorCode::kTimeout, "no token file from job A within the wait");
        std::memcpy(token.data(), shared->data(), token.size());
      }
    }
    TransportOptions options;
    options.token = token;
    auto made = make_ucx_transport(options);
    RUCCL_TRY(made);
    Transport& t = *made.value();
    const std::vector<std::byte> mine = t.address();
    if (!write_file(path(role + ".addr"), mine.data(), mine.size()))
      return Status(ErrorCode::kInternal, "cannot write " + path(role + ".addr"));
    auto theirs = wait_for_file(path(other + ".addr"), Clock::now() + kFileWait);
    if (!theirs) return Status(ErrorCode::kTimeout, "no address from job " + other + " within the wait");
    std::vector<std::vector<std::byte>> addresses;
    if (role == "A") addresses = {mine, *theirs};
    else addresses = {*theirs, mine};
    const std::size_t self = role == "A" ? 0 : 1;
    const std::size_t peer = 1 - self;

    Status result = t.connect(addresses, after(kConnect));
    if (result) result = t.handshake(after(kHandshake));
    if (result && same_token) {
      // One small exchange each way: the connection really carries data.
      Step step;
      step.add_recvs(peer, 7, 1, 5, {1, 4097});
      step.add_sends(peer, self, 7, 1, 5, {1, 4097});
      step.finish();
      result = t.exchange(step.sends, step.recvs, after(kHandshake));
      if (result) {
        if (std::string bad = step.check(); !bad.empty())
          result = Status(ErrorCode::kInternal, "exchange delivered wrong data: " + bad);
      }
    }
    // Meet the other job before closing, so neither tears its worker down
    // while the other still talks to it; the outcomes above are already fixed.
    const char done = 1;
    (void)write_file(path(role + ".done"), &done, 1);
    (void)wait_for_file(path(other + ".done"), Clock::now() + kDoneWait);
    (void)t.close(after(kClose));
    return result;
  }
};

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '"') c = c == '"' ? '\'' : ' ';
  return text;
}

int probe_main(int argc, char** argv) {
  const std::string mode = argc > 3 ? argv[3] : "refuse";
  if (argc < 3 || (std::strcmp(argv[1], "A") != 0 && std::strcmp(argv[1], "B") != 0) ||
      (mode != "refuse" && mode != "same-token")) {
    std::fprintf(stderr, "usage: %s A|B <dir> [refuse|same-token]\n", argv[0]);
    return 2;
  }
  Probe probe{argv[1], std::strcmp(argv[1], "A") == 0 ? "B" : "A", argv[2], mode == "same-token"};

  auto token = draw_and_share_token();
  Status status = token.status();
  JobToken used{};
  if (token) {
    used = token.value();
    status = probe.run(used);
  }
  const std::string msg = status.is_ok() ? "handshake and exchange ok" : status.message();
  bool expected = false;
  if (probe.same_token) {
    expected = status.is_ok();
  } else {
    // Refused for the right reason: the other job's key, named as such, with
    // the peer's rank; and the token (a key) nowhere in the message.
    const std::string peer_rank = "rank " + std::string(probe.role == "A" ? "1" : "0");
    expected = status.code() == ErrorCode::kProtocolError && contains(msg, "another job") &&
               contains(msg, "refused") && contains(msg, peer_rank) &&
               !contains(msg, token_hex(used));
  }
  std::printf("TOKEN role=%s token=%s\n", probe.role.c_str(), token_hex(used).c_str());
  std::printf("RESULT role=%s mode=%s status=%s expected=%s msg=\"%s\"\n", probe.role.c_str(),
              mode.c_str(), std::string(error_code_name(status.code())).c_str(),
              expected ? "yes" : "no", one_line(msg).c_str());
  std::fflush(stdout);
  return expected ? 0 : 1;
}

}  // namespace
}  // namespace ruccl::transport::test

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int rc = ruccl::transport::test::probe_main(argc, argv);
  MPI_Finalize();
  return rc;
}
