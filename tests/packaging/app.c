/* A consumer of the installed rlock: links, loads and answers. */
#include <stdio.h>
#include <string.h>

#include <rlock.h>

int main(void)
{
    const char *version = rl_version();
    const char *busy = rl_strerror(RL_EBUSY);

    if (version == NULL || strcmp(version, RL_VERSION_STRING) != 0) {
        fprintf(stderr, "app: rl_version() = %s, header says %s\n",
                version ? version : "(null)", RL_VERSION_STRING);
        return 1;
    }
    if (busy == NULL || busy[0] == '\0') {
        fprintf(stderr, "app: rl_strerror(RL_EBUSY) is empty\n");
        return 1;
    }
    printf("rlock %s: RL_EBUSY = %s\n", version, busy);
    return 0;
}
