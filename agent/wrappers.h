/* The programs the kept interpreters run (agent/wrappers/python.py and
 * node.js, embedded at build time by scripts/embed-text.sh): each reads
 * code requests on fd 3 and answers on fd 4 (the protocol is in their
 * head comments and code.c). */
#ifndef BC_AGENT_WRAPPERS_H
#define BC_AGENT_WRAPPERS_H

extern const char agent_python_wrapper[];
extern const char agent_node_wrapper[];

#endif
