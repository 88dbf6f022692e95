"""Parameters as one flat vector and back."""


def parameters_to_vector(parameters):
    """Every parameter flattened and joined."""
    import anygrad

    return anygrad.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive pieces of ``vec`` into the parameters."""
    import anygrad

    offset = 0
    with anygrad.no_grad():
        for p in parameters:
            count = p.numel()
            p.copy_(vec[offset:offset + count].reshape(*p.shape))
            offset += count
