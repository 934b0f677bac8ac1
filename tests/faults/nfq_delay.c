/* ruccl_nfq_delay: a userspace packet delayer for the netns fault test
 * (tests/faults/netns_faults.sh), because this kind of kernel has no sch_netem
 * (`tc qdisc ... netem` fails with "Specified qdisc kind is unknown").
 *   ruccl_nfq_delay <queue_num> <delay_ms> [drop_percent=0]
 * Pair it with an iptables rule in the same network namespace, e.g.
 *   iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num 7 --queue-bypass
 * Every queued packet is held <delay_ms>, then accepted in FIFO order (or dropped
 * with probability drop_percent/100). --queue-bypass and FAIL_OPEN let traffic
 * flow if this program dies or its queue overflows, so a crash of the delayer
 * never looks like a network fault. SIGTERM/SIGINT: release every held packet, exit.
 * Taken from the verified recipe ../shared/recipes/scripts/src/nfq_delay.c.
 * Built only where libnetfilter_queue is found (Debian: libnetfilter-queue-dev). */
#include <arpa/inet.h>
#include <stdint.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <sys/socket.h>

#define QCAP (1u << 18)
static struct { uint32_t id; double due; } q[QCAP];
static unsigned qh_i = 0, qt_i = 0;
static double delay_s, drop_p;
static volatile sig_atomic_t stop = 0;
static unsigned long n_pass = 0, n_drop = 0;
static double now(void){ struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec + 1e-9*t.tv_nsec; }
static void on_sig(int s){ (void)s; stop = 1; }

static int cb(struct nfq_q_handle *qh, struct nfgenmsg *m, struct nfq_data *nfa, void *d){
    (void)m; (void)d;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    uint32_t id = ph ? ntohl(ph->packet_id) : 0;
    if (drop_p > 0 && drand48() < drop_p) { n_drop++; return nfq_set_verdict(qh, id, NF_DROP, 0, NULL); }
    if (((qt_i + 1) & (QCAP-1)) == qh_i) { n_pass++; return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL); } /* full: pass */
    q[qt_i].id = id; q[qt_i].due = now() + delay_s; qt_i = (qt_i + 1) & (QCAP-1);
    return 0;
}
int main(int argc, char **argv){
    if (argc < 3) { fprintf(stderr, "usage: %s queue_num delay_ms [drop_percent]\n", argv[0]); return 2; }
    int qnum = atoi(argv[1]); delay_s = atof(argv[2]) / 1000.0; drop_p = argc > 3 ? atof(argv[3]) / 100.0 : 0;
    srand48(time(NULL));
    signal(SIGTERM, on_sig); signal(SIGINT, on_sig);
    struct nfq_handle *h = nfq_open(); if (!h) { perror("nfq_open"); return 1; }
    struct nfq_q_handle *qh = nfq_create_queue(h, qnum, cb, NULL);
    if (!qh) { perror("nfq_create_queue"); return 1; }
    nfq_set_mode(qh, NFQNL_COPY_META, 0);
    nfq_set_queue_maxlen(qh, 100000);
    nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN);
    int fd = nfq_fd(h), rcv = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv);
    fprintf(stderr, "nfq_delay: queue %d delay %.1f ms drop %.1f%%\n", qnum, delay_s*1e3, drop_p*100);
    char buf[65536];
    while (!stop) {
        int to = -1;
        if (qh_i != qt_i) { double w = q[qh_i].due - now(); to = w <= 0 ? 0 : (int)(w * 1000) + 1; }
        struct pollfd p = { fd, POLLIN, 0 };
        int r = poll(&p, 1, to < 0 ? 200 : to);
        if (r > 0 && (p.revents & POLLIN)) {
            int n;
            while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) nfq_handle_packet(h, buf, n);
            if (n < 0 && errno == ENOBUFS) fprintf(stderr, "nfq_delay: ENOBUFS (packets lost)\n");
        }
        double t = now();
        while (qh_i != qt_i && q[qh_i].due <= t) { nfq_set_verdict(qh, q[qh_i].id, NF_ACCEPT, 0, NULL); qh_i = (qh_i + 1) & (QCAP-1); n_pass++; }
    }
    while (qh_i != qt_i) { nfq_set_verdict(qh, q[qh_i].id, NF_ACCEPT, 0, NULL); qh_i = (qh_i + 1) & (QCAP-1); n_pass++; }
    fprintf(stderr, "nfq_delay: exit, passed %lu dropped %lu\n", n_pass, n_drop);
    nfq_destroy_queue(qh); nfq_close(h);
    return 0;
}
