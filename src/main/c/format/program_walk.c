/*
 * Walking a decoded program (format/chip_callable.h, "walking a decoded
 * program"): its instructions in order, a SUBMIT's parameters and predecessor
 * ordinals, and what the text alone fixes for every run — the task count and
 * the local-heap peak. Reads only what the decoder validated. A sub-graph's
 * body is walked as a program of its own (chip_program_subgraph_body); the
 * decoder proved it holds no SUBGRAPH or INVOKE, so nothing recurses twice.
 */
#include <string.h>

#include "format/chip_callable.h"

int chip_program_next(const ChipCallableView *view, PtoProgramCursor *cursor, PtoProgramInsn *insn)
{
    if (view->program == NULL || cursor->index >= view->program_header.instruction_count)
        return 0;
    if (cursor->offset == 0)
        cursor->offset = sizeof(PtoProgramHeader);
    memcpy(&insn->head, view->program + cursor->offset, sizeof insn->head);
    insn->offset = cursor->offset;
    memset(&insn->u, 0, sizeof insn->u);
    size_t body = insn->head.size_bytes < sizeof insn->u ? insn->head.size_bytes : sizeof insn->u;
    memcpy(&insn->u, view->program + cursor->offset, body);
    cursor->offset += insn->head.size_bytes;
    cursor->index++;
    return 1;
}

void chip_program_subgraph_body(const ChipCallableView *view, const PtoProgramInsn *insn, ChipCallableView *body)
{
    uint32_t count = insn->u.subgraph.boundary_count, at = chip_program_subgraph_body_offset(count);
    *body = *view;
    body->program = view->program + insn->offset + at;
    body->program_size = insn->head.size_bytes - at;
    memcpy(&body->program_header, body->program, sizeof body->program_header);
    body->signature = view->program + insn->offset + CHIP_SUBGRAPH_DIRECTIONS_OFFSET;
    body->tensor_count = 0;
    while (body->tensor_count < count && body->signature[body->tensor_count] != PTO_ARG_SCALAR)
        body->tensor_count++;
    body->scalar_count = count - body->tensor_count;
    body->opcodes_used = 0;
    body->submit_count = 0;
    body->views_unproved = 0;
}

uint64_t chip_program_task_count(const ChipCallableView *view)
{
    /* times[d]: how often code at loop depth d runs (saturating); the decoder
       proved the nesting, at most PTO_PROGRAM_MAX_LOOP_DEPTH deep */
    uint64_t times[PTO_PROGRAM_MAX_LOOP_DEPTH + 1] = { 1 };
    uint32_t depth = 0;
    uint64_t tasks = 0, each[PTO_PROGRAM_MAX_SUBGRAPHS] = { 0 }; /* an INVOKE's tasks, by sub-graph */
    PtoProgramCursor cursor = { 0, 0 };
    PtoProgramInsn insn;
    while (chip_program_next(view, &cursor, &insn)) {
        switch (insn.head.opcode) {
        case PTO_OP_SUBMIT:
            if (__builtin_add_overflow(tasks, times[depth], &tasks))
                return UINT64_MAX;
            break;
        case PTO_OP_SUBGRAPH: {
            ChipCallableView body;
            if (insn.u.subgraph.subgraph_id >= PTO_PROGRAM_MAX_SUBGRAPHS)
                return UINT64_MAX; /* not a decoded program */
            chip_program_subgraph_body(view, &insn, &body);
            uint64_t n = chip_program_task_count(&body);
            each[insn.u.subgraph.subgraph_id] = n > UINT64_MAX - 2 ? UINT64_MAX : n + 2;
            break;
        }
        case PTO_OP_INVOKE: {
            uint64_t n;
            if (insn.u.invoke.subgraph_id >= PTO_PROGRAM_MAX_SUBGRAPHS)
                return UINT64_MAX;
            if (__builtin_mul_overflow(times[depth], each[insn.u.invoke.subgraph_id], &n) ||
                __builtin_add_overflow(tasks, n, &tasks))
                return UINT64_MAX;
            break;
        }
        case PTO_OP_LOOP:
            if (depth == PTO_PROGRAM_MAX_LOOP_DEPTH)
                return UINT64_MAX; /* not a decoded program: claim the worst */
            if (__builtin_mul_overflow(times[depth], insn.u.loop.count, &times[depth + 1]))
                times[depth + 1] = UINT64_MAX; /* saturates: a later count 0 still zeroes it */
            depth++;
            break;
        case PTO_OP_END_LOOP:
            if (depth > 0)
                depth--;
            break;
        default:
            break;
        }
    }
    return tasks;
}

/* Whether a program has an ALLOC_TENSOR. */
static int allocates(const ChipCallableView *view)
{
    PtoProgramCursor cursor = { 0, 0 };
    PtoProgramInsn insn;
    while (chip_program_next(view, &cursor, &insn))
        if (insn.head.opcode == PTO_OP_ALLOC_TENSOR)
            return 1;
    return 0;
}

uint64_t chip_program_local_peak(const ChipCallableView *view, uint64_t align)
{
    /* marks[k]: bytes live when the k-th open scope began; a scope's end frees
       back to it (the decoder proved the nesting) */
    uint64_t marks[PTO_PROGRAM_MAX_SCOPE_DEPTH + 1], live = 0, peak = 0;
    uint64_t block[PTO_PROGRAM_MAX_SUBGRAPHS] = { 0 }; /* an INVOKE's local block, by sub-graph, rounded to align */
    uint32_t scopes = 0;
    PtoProgramCursor cursor = { 0, 0 };
    PtoProgramInsn insn;
    while (chip_program_next(view, &cursor, &insn)) {
        switch (insn.head.opcode) {
        case PTO_OP_SUBGRAPH: {
            /* the invocation's block, as the sub-graph layer sizes it (orch/subgraph.h) */
            ChipCallableView body;
            uint64_t bytes, rounded;
            if (insn.u.subgraph.subgraph_id >= PTO_PROGRAM_MAX_SUBGRAPHS)
                return UINT64_MAX; /* not a decoded program */
            chip_program_subgraph_body(view, &insn, &body);
            bytes = chip_program_local_peak(&body, PTO_SUBGRAPH_LOCAL_ALIGN);
            if (bytes == 0 && allocates(&body))
                bytes = 1; /* empty tensors only: the sub-graph layer still allocates a block */
            if (bytes == UINT64_MAX || __builtin_add_overflow(bytes, align - 1, &rounded))
                return UINT64_MAX;
            block[insn.u.subgraph.subgraph_id] = rounded / align * align;
            break;
        }
        case PTO_OP_INVOKE: {
            /* SCOPE_BEGIN; ALLOC_TENSOR(block); SCOPE_END */
            uint64_t held;
            if (insn.u.invoke.subgraph_id >= PTO_PROGRAM_MAX_SUBGRAPHS ||
                __builtin_add_overflow(live, block[insn.u.invoke.subgraph_id], &held))
                return UINT64_MAX;
            peak = held > peak ? held : peak;
            break;
        }
        case PTO_OP_ALLOC_TENSOR: {
            uint64_t rounded;
            if (__builtin_add_overflow(insn.u.alloc.bytes, align - 1, &rounded) ||
                __builtin_add_overflow(live, rounded / align * align, &live))
                return UINT64_MAX;
            peak = live > peak ? live : peak;
            break;
        }
        case PTO_OP_SCOPE_BEGIN:
        case PTO_OP_SCOPE_BEGIN_MANUAL:
            if (scopes <= PTO_PROGRAM_MAX_SCOPE_DEPTH)
                marks[scopes] = live;
            scopes++;
            break;
        case PTO_OP_SCOPE_END:
            if (scopes > 0 && --scopes <= PTO_PROGRAM_MAX_SCOPE_DEPTH)
                live = marks[scopes];
            break;
        default:
            break;
        }
    }
    return peak;
}

void chip_program_param(const ChipCallableView *view, const PtoProgramInsn *insn, uint32_t i, PtoProgramParam *out)
{
    memcpy(out, view->program + insn->offset + sizeof(PtoSubmitInsn) + (size_t)i * sizeof *out, sizeof *out);
}

void chip_program_after(const ChipCallableView *view, const PtoProgramInsn *insn, uint32_t k, PtoAffine *out)
{
    memcpy(out,
           view->program + insn->offset + sizeof(PtoSubmitInsn) + (size_t)insn->head.param_count * sizeof(PtoProgramParam) +
               (size_t)k * sizeof *out,
           sizeof *out);
}

