// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {FCFSAuction} from "./FCFSAuction.sol";

/// @title First come, first served with an order book.
/// @notice Like FCFS, but bought tokens are recorded and claimed with `withDraw()` after the end. The bid coin
///         goes to the project wallet at bid time.
contract OBFCFSAuction is FCFSAuction {
    mapping(address bidder => uint256) public tokensOwed;

    function _deliver(address bidder, uint256 tokens) internal override {
        tokensOwed[bidder] += tokens;
    }

    function _claim(address bidder) internal override {
        uint256 tokens = tokensOwed[bidder];
        if (tokens == 0) revert NothingToClaim(bidder);
        tokensOwed[bidder] = 0;
        _sendTokens(bidder, tokens);
        _announceClaim(bidder, tokens, 0);
    }
}
