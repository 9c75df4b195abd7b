/* The local-reduction API: mpiopt's kernel where it has one, the vendor's otherwise. */
#include <string.h>
#include "mpiopt.h"
#include "op_kernel.h"
#include "coll/engine/report.h"

int mpiopt_reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                        MPI_Op op)
{
    mpiopt_op_kernel k;
    /* count 0 included: MPICH rejects MPI_COMPLEX32, which mpiopt reduces, even then */
    if (count >= 0 && inbuf != MPI_IN_PLACE && inoutbuf != MPI_IN_PLACE &&
        mpiopt_find_kernel(datatype, op, &k)) {
        mpiopt_report_call(MPIOPT_CALL_REDUCE_LOCAL, MPIOPT_ALG_AUTO, MPIOPT_TAKEN);
        if (count > 0)
            mpiopt_run2(k.k2, inbuf, inoutbuf, (size_t)count, k.elem_size);
        return MPI_SUCCESS;
    }
    mpiopt_report_call(MPIOPT_CALL_REDUCE_LOCAL, MPIOPT_ALG_VENDOR,
                       count < 0 || inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE
                           ? MPIOPT_WHY_ARGUMENTS
                       : mpiopt_vendor_takes(datatype, op) ? MPIOPT_WHY_DATATYPE
                                                           : MPIOPT_WHY_USER_OP);
    /* bad arguments: the vendor returns its own error codes and messages. */
    return PMPI_Reduce_local(inbuf, inoutbuf, count, datatype, op);
}

int mpiopt_reduce_local3(const void *inbuf1, const void *inbuf2, void *outbuf, int count,
                         MPI_Datatype datatype, MPI_Op op)
{
    mpiopt_op_kernel k;
    if (count >= 0 && mpiopt_find_kernel(datatype, op, &k)) {
        if (count > 0)
            mpiopt_run3(k.k3, inbuf1, inbuf2, outbuf, (size_t)count, k.elem_size);
        return MPI_SUCCESS;
    }
    if (count <= 0)
        return PMPI_Reduce_local(inbuf1, outbuf, count, datatype, op);
    /* No kernel (a user op, a derived type): out = in2, then out = in1 op out. The copy goes
     * through MPI itself so any datatype layout, contiguous or not, is copied correctly. */
    int rc = PMPI_Sendrecv(inbuf2, count, datatype, 0, 0, outbuf, count, datatype, 0, 0,
                           MPI_COMM_SELF, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return rc;
    return PMPI_Reduce_local(inbuf1, outbuf, count, datatype, op);
}

int mpiopt_has_kernel(MPI_Datatype datatype, MPI_Op op)
{
    mpiopt_op_kernel k;
    return mpiopt_find_kernel(datatype, op, &k);
}

const char *mpiopt_kernel_isa(void)
{
    return mpiopt_kernels()->isa;
}
