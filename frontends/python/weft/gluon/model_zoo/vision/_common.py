"""What every zoo constructor shares."""

_NO_WEIGHTS = ("{name}: pretrained=True was asked, but Weft ships no pretrained weights. Build the "
               "model with pretrained=False, then initialise it (net.initialize()) or load weights "
               "you have (net.load_parameters(path), MXNet .params files included).")


def check_pretrained(name, pretrained):
    """Raises a clear error for pretrained=True: there are no weights to download."""
    if pretrained:
        raise ValueError(_NO_WEIGHTS.format(name=name))
