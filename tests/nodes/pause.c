/*
 * The sandbox process of a pod, for the local pause image images.sh builds
 * (no registry is reachable to pull Kubernetes' own). It only has to exist:
 * the pod's namespaces live as long as it does. It exits 0 on SIGINT or
 * SIGTERM, so stopping a pod is quick and clean, and, being PID 1 when the
 * pod shares one PID namespace, it reaps the orphans re-parented to it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

static volatile sig_atomic_t stopping;

static void on_stop(int signal) {
    (void)signal;
    stopping = 1;
}

/* Only there so that SIGCHLD interrupts sigsuspend: main does the reaping. */
static void on_child(int signal) { (void)signal; }

int main(void) {
    sigset_t handled, waiting;
    sigemptyset(&handled);
    sigaddset(&handled, SIGINT);
    sigaddset(&handled, SIGTERM);
    sigaddset(&handled, SIGCHLD);
    /* Blocked outside sigsuspend: a signal landing between the check of
     * `stopping` and the wait would otherwise be slept through. */
    if (sigprocmask(SIG_BLOCK, &handled, &waiting) != 0) {
        perror("pause: sigprocmask");
        return 1;
    }
    sigdelset(&waiting, SIGINT);
    sigdelset(&waiting, SIGTERM);
    sigdelset(&waiting, SIGCHLD);

    struct sigaction stop = {.sa_handler = on_stop};
    struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
    sigemptyset(&stop.sa_mask);
    sigemptyset(&child.sa_mask);
    if (sigaction(SIGINT, &stop, NULL) != 0 || sigaction(SIGTERM, &stop, NULL) != 0 ||
        sigaction(SIGCHLD, &child, NULL) != 0) {
        perror("pause: sigaction");
        return 1;
    }

    while (!stopping) {
        sigsuspend(&waiting);
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
    }
    return 0;
}
